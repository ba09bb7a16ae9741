"""`contextd completion bash|zsh|fish`: a completion script made from the parser itself, so
it names every command and option there is (and nothing that is not)."""

from __future__ import annotations

import argparse
import shlex

SHELLS = ("bash", "zsh", "fish")


def commands_of(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps its subcommands only there
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def options_of(parser: argparse.ArgumentParser) -> list[str]:
    return sorted(option for action in parser._actions for option in action.option_strings if option.startswith("--"))


def choices_of(parser: argparse.ArgumentParser) -> list[str]:
    """The values a positional argument takes from a fixed list (`completion SHELL`)."""
    return [
        str(choice)
        for action in parser._actions
        if not action.option_strings and action.choices and not isinstance(action, argparse._SubParsersAction)
        for choice in action.choices
    ]


def summaries(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {}


def bash_script(parser: argparse.ArgumentParser) -> str:
    commands = commands_of(parser)
    cases = "\n".join(
        f"    {name}) words={shlex.quote(' '.join([*commands_of(sub), *choices_of(sub), *options_of(sub)]))} ;;"
        for name, sub in commands.items()
    )
    top = " ".join([*commands, *options_of(parser)])
    return f"""# contextd completion for bash: eval "$(contextd completion bash)"
_contextd() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} command="" words="{top}" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${{COMP_WORDS[i]}} in -*) ;; *) command=${{COMP_WORDS[i]}}; break ;; esac
  done
  case $command in
{cases}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -o default -F _contextd contextd
"""


def zsh_script(parser: argparse.ArgumentParser) -> str:
    return (
        '# contextd completion for zsh: eval "$(contextd completion zsh)"\n'
        "autoload -U +X bashcompinit && bashcompinit\n" + bash_script(parser).split("\n", 1)[1]
    )


def fish_script(parser: argparse.ArgumentParser) -> str:
    lines = ["# contextd completion for fish: contextd completion fish | source", "complete -c contextd -f"]
    described = summaries(parser)
    for name in commands_of(parser):
        lines.append(f"complete -c contextd -n __fish_use_subcommand -a {name} -d {shlex.quote(described.get(name, ''))}")
    for option in options_of(parser):
        lines.append(f"complete -c contextd -l {option[2:]}")
    for name, sub in commands_of(parser).items():
        for option in options_of(sub):
            lines.append(f"complete -c contextd -n '__fish_seen_subcommand_from {name}' -l {option[2:]}")
        for word in [*commands_of(sub), *choices_of(sub)]:
            lines.append(f"complete -c contextd -n '__fish_seen_subcommand_from {name}' -a {word}")
    return "\n".join(lines) + "\n"


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    return {"bash": bash_script, "zsh": zsh_script, "fish": fish_script}[shell](parser)
