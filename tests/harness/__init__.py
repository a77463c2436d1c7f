"""The test bed: real Kubernetes control plane, Storm daemons, Prometheus and the cgroup pod runner.

Test-only code: nothing under tests/ is shipped in the product.
"""
