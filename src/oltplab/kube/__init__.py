"""Kubernetes as oltplab meets it: the one API client, what a pod waits on, and the
databases that operators deploy (read from their live resources)."""
