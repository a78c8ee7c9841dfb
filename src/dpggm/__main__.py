"""``python -m dpggm`` runs the command line."""

from dpggm.cli.main import main

main()
