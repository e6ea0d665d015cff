# bash completion for rq-cli.
# Generated from the rq-cli app by scripts/gen_completions.py: do not edit.
# Regenerate with: python scripts/gen_completions.py
# Install: source it from ~/.bashrc, or copy it to
#   ~/.local/share/bash-completion/completions/rq-cli

_rq_cli_completion() {
    local IFS=$'
'
    COMPREPLY=( $( env COMP_WORDS="${COMP_WORDS[*]}" \
                   COMP_CWORD=$COMP_CWORD \
                   _RQ_CLI_COMPLETE=complete_bash $1 ) )
    return 0
}

complete -o default -F _rq_cli_completion rq-cli
