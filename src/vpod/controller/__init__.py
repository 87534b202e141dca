"""The V-IPU controller: use-cases over the store and agents, and their transports."""
