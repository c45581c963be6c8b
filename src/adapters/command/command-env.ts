/** The explicit environment of a configured command: PATH, a fixed locale, the allowlist, extras. */
export function commandEnv(env: NodeJS.ProcessEnv, allow: readonly string[], extra: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = { PATH: env.PATH ?? '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' };
  for (const name of allow) {
    const v = env[name];
    if (v !== undefined) out[name] = v;
  }
  return { ...out, ...extra };
}
