"""Placeholder demo: replaced by a server and client talking once the engine lands."""

import trimcp

print(f"trimcp {trimcp.__version__} is installed")
