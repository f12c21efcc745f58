from gfxpack.cli import main

main()
