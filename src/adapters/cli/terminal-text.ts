/**
 * Text for a terminal: what agents and the code under test wrote reaches `evidence`,
 * `log`, `status` and error lines. A control sequence in it (an OSC title, a clear-screen, an
 * OSC 8 hyperlink to `javascript:`, a carriage return that overwrites a line) must not act on the
 * reader's terminal. Every C0 and C1 control but tab and newline (and a CR before a newline), DEL,
 * and the bidirectional overrides that reorder what is shown ("Trojan source") are written as
 * visible escapes: `\x1b`, `\u009b`, `\u202e`. `--json` output is escaped by JSON itself.
 */
const UNSAFE = /\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

export function escapeTerminal(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    // C1 and the overrides as \\uXXXX: inside a JSON line (`run --progress ndjson`) that is still a valid escape.
    return code < 0x80 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** A rule id or a list of them: `R-28`, `R-50, R-51`. */
const IDS = 'R-\\d+(?:, R-\\d+)*';
const RULE_PREFIX = new RegExp(`(^|[\\s(:])${IDS}: `, 'gm');
const RULE_ALONE = new RegExp(` ?\\(${IDS}\\)`, 'g');
const RULE_LEADS = new RegExp(`\\(${IDS}[;:,] `, 'g');

/**
 * A line for a person without the rule ids (docs/rules.md) it cites: `proposal refused: …`
 * reads `proposal refused: …`, `…; expose …` reads `…; expose …`. Recorded reasons keep
 * them (they are history); `--verbose` and `--json` show them as recorded.
 */
export function withoutRuleIds(text: string): string {
  return text.replace(RULE_LEADS, '(').replace(RULE_ALONE, '').replace(RULE_PREFIX, '$1');
}
