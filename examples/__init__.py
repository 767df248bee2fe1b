"""Example scripts (run them as files: python examples/<name>/<script>.py); _cli holds what they share."""
