import { UsageError } from '../../../events/errors.js';
import { GLOBAL_FLAGS } from '../args.js';
import { COMMANDS } from '../registry.js';
import type { CommandContext } from '../types.js';

export const positionals = { min: 1, max: 1 };

/** The words a command's first argument may be, where it takes one of a few. */
const ACTIONS: Readonly<Record<string, readonly string[]>> = {
  audit: ['export', 'verify', 'verifier'],
  cache: ['stats', 'verify', 'gc'],
  completion: ['bash', 'zsh'],
  otel: ['export'],
  provenance: ['verify', 'publish'],
  schema: ['proposal', 'packet', 'planner-input', 'config'],
  witness: ['cosign'],
};

/** Each command with its flags (its own and the global ones), read from the commands themselves. */
export async function commandFlags(): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const [name, entry] of Object.entries(COMMANDS)) {
    const mod = await entry.load();
    out[name] = [...Object.keys(mod.flags ?? {}), ...Object.keys(GLOBAL_FLAGS)].map((f) => `--${f}`).sort();
  }
  return out;
}

/** A bash completion function for longbuild (zsh loads it through bashcompinit). */
export function bashScript(flags: Readonly<Record<string, readonly string[]>>): string {
  const cases = Object.entries(flags).map(([name, list]) => {
    const actions = ACTIONS[name];
    const words = actions ? `${list.join(' ')} ${actions.join(' ')}` : list.join(' ');
    return `    ${name}) words='${words}' ;;`;
  });
  return [
    '# longbuild completion (bash; zsh: autoload -U +X bashcompinit && bashcompinit first)',
    '# install: longbuild completion bash > ~/.local/share/bash-completion/completions/longbuild',
    '_longbuild() {',
    '  local cur=${COMP_WORDS[COMP_CWORD]} command="" i words',
    '  for ((i = 1; i < COMP_CWORD; i++)); do',
    '    case ${COMP_WORDS[i]} in --dir|--repo) ((i++)) ;; -*) ;; *) command=${COMP_WORDS[i]}; break ;; esac',
    '  done',
    '  if [[ -z $command ]]; then',
    `    words='${Object.keys(flags).join(' ')} ${Object.keys(GLOBAL_FLAGS).map((f) => `--${f}`).join(' ')}'`,
    '  else',
    '    case $command in',
    ...cases,
    '    *) words="" ;;',
    '    esac',
    '  fi',
    '  case ${COMP_WORDS[COMP_CWORD-1]} in --dir|--repo|--to|--config|--request|--blueprint|--key|--out|--since|--check|--state) COMPREPLY=($(compgen -f -- "$cur")); return ;; esac',
    '  COMPREPLY=($(compgen -W "$words" -- "$cur"))',
    '}',
    'complete -o default -F _longbuild longbuild',
    '',
  ].join('\n');
}

export async function run(ctx: CommandContext): Promise<string> {
  const shell = ctx.positionals[0]!;
  if (shell !== 'bash' && shell !== 'zsh') throw new UsageError(`completion: unknown shell '${shell}' (expected: bash, zsh)`);
  const script = bashScript(await commandFlags());
  return shell === 'zsh' ? `autoload -U +X bashcompinit && bashcompinit\n${script}` : script;
}

export function render(script: string): string {
  return script;
}

export function renderJson(script: string): string {
  return `${JSON.stringify({ script })}\n`;
}
