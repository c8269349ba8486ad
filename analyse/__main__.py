from analyse.cli import main

main()
