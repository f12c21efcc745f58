"""Python wheels split per GPU arch."""
