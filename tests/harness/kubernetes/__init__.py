"""The Kubernetes part of the test bed: binaries built from Go modules, the control plane, the pod
runner that stands in for the kubelet (replicas as processes in CPU cgroups), their fixtures.

Importing this package imports nothing: the build and ``up``/``down`` commands are standard library only.
"""
