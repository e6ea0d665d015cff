# fish completion for rq-cli.
# Generated from the rq-cli app by scripts/gen_completions.py: do not edit.
# Regenerate with: python scripts/gen_completions.py
# Install: copy it to ~/.config/fish/completions/rq-cli.fish

complete --command rq-cli --no-files --arguments "(env _RQ_CLI_COMPLETE=complete_fish _TYPER_COMPLETE_FISH_ACTION=get-args _TYPER_COMPLETE_ARGS=(commandline -cp) rq-cli)" --condition "env _RQ_CLI_COMPLETE=complete_fish _TYPER_COMPLETE_FISH_ACTION=is-args _TYPER_COMPLETE_ARGS=(commandline -cp) rq-cli"
