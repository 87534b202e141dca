"""The cloud layer: AI clusters, flavors, quotas, tasks, metering and drivers."""
