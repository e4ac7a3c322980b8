"""Stage 6, writing: the artifact and its companion, together or not at all (locks, journal,
crash repair)."""
