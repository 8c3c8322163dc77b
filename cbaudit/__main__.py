"""`python -m cbaudit`."""

from cbaudit.cli.main import main

main()
