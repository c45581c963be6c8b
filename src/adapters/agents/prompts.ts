import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { ValidationError } from '../../events/errors.js';
import { PlannerProposalSchema } from '../../commands/horizon.js';
import { packageFile } from '../package-files.js';

/**
 * The prompts of agent presets: Markdown files with `{{placeholders}}`, shipped in the package's
 * `prompts/` directory and overridable per build (config `prompt`). Placeholders: `{{callId}}`
 * (the call's idempotency key), `{{cwd}}` (the agent's working directory), `{{input}}` (the
 * planner input or work packet, JSON) and `{{proposalSchema}}` (the proposal's JSON Schema).
 */
export interface PromptTemplate {
  readonly source: string;
  readonly text: string;
}

const PLACEHOLDERS = new Set(['callId', 'cwd', 'input', 'proposalSchema']);

/** The shipped prompt of a role (`prompts/planner.md`, `prompts/worker.md`). */
export function defaultPromptPath(role: 'planner' | 'worker'): string {
  return packageFile('prompts', `${role}.md`);
}

/** Load a prompt template; an unknown placeholder or a missing `{{input}}` is refused, naming the file. */
export function loadPrompt(path: string): PromptTemplate {
  if (!existsSync(path)) throw new ValidationError(`prompt file ${path} does not exist`);
  const text = readFileSync(path, 'utf8');
  for (const m of text.matchAll(/\{\{\s*([A-Za-z]+)\s*\}\}/g)) {
    if (!PLACEHOLDERS.has(m[1]!)) throw new ValidationError(`prompt file ${path}: unknown placeholder {{${m[1]}}} (known: ${[...PLACEHOLDERS].map((p) => `{{${p}}}`).join(', ')})`);
  }
  if (!/\{\{\s*input\s*\}\}/.test(text)) throw new ValidationError(`prompt file ${path} has no {{input}}: the agent would never see its input`);
  return { source: path, text };
}

let schemaText: string | undefined;

/** The template with its placeholders filled in. */
export function renderPrompt(t: PromptTemplate, values: { readonly callId: string; readonly cwd: string; readonly input: string }): string {
  schemaText ??= JSON.stringify(z.toJSONSchema(PlannerProposalSchema, { io: 'input' }), null, 2);
  const all: Record<string, string> = { ...values, proposalSchema: schemaText };
  return t.text.replace(/\{\{\s*([A-Za-z]+)\s*\}\}/g, (_, name: string) => all[name] ?? '');
}
