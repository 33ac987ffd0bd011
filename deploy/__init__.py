"""Deployment material that is not part of the oltplab package: the pods' Containerfile and the
cluster tooling (deploy.kube)."""
