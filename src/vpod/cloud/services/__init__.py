"""Cloud use-cases: projects, clusters, volumes, tasks, billing, hosts, capacity."""
