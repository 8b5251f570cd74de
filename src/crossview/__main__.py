from crossview.cli import main

main()
