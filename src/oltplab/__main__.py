from oltplab.cli import main

main()
