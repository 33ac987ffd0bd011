"""sysbench: the driver (`driver`: what it accepts, its command lines, running it), its
output read back in every format (`output`), and the marks a result earns (`validity`)."""
