"""One matrix on many machines: `blocks` (the cut and the deal), a shard's run with its
`canary`, `merge` into one results directory, and the schedulers that start shards
(`slurm`, `kubernetes`)."""

from oltplab.distribute.kubernetes import Kubernetes
from oltplab.distribute.schedulers import register
from oltplab.distribute.slurm import Slurm

register(Slurm.name, Slurm)
register(Kubernetes.name, Kubernetes)
