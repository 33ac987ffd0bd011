"""What every layer uses: errors, sizes, small statistics, the metric names, host facts and
the processes oltplab starts."""
