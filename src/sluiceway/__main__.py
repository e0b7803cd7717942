from sluiceway.cli import main

main()
