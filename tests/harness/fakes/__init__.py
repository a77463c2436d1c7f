"""Light fakes that answer like Storm's Nimbus and Prometheus, on loopback, for many topologies at
once (the fleet benchmark, bench/fleet.py): the real wire protocols, synthetic numbers, and a server
that accepts connections and never answers."""
