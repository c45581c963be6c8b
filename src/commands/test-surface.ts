/**
 * The verification surface (R-48, R-49): the files that decide what verification runs and how,
 * and the tests a candidate is judged by. Pure: which ecosystems a build has (from the files of
 * its base head and its verification commands), the surface they give, and whether a change to
 * a path touches it. The host owns the surface; a candidate changes it only where its node's plan
 * says so (`changes`), and adds new tests freely.
 */
import picomatch from 'picomatch/posix.js';

/** What a node may declare it changes (R-49): existing tests, or the rest of the surface. */
export const CHANGE_KINDS = ['tests', 'verification'] as const;
export type ChangeKind = (typeof CHANGE_KINDS)[number];

/** What a build does when a declared test change makes tests of its base fail (R-50). */
export const TEST_CHANGE_POLICIES = ['strict', 'review', 'record'] as const;
export type TestChangePolicy = (typeof TEST_CHANGE_POLICIES)[number];

/** A build's verification surface as its first event records it. */
export interface VerificationSurface {
  /** Surface entries: a glob of paths, optionally narrowed to part of the file (`#key`, `#[section]`). */
  readonly files: readonly string[];
  /** Globs of test files: an existing one is protected, a new one may always be added. */
  readonly tests: readonly string[];
  /** The ecosystems the defaults came from (empty: none recognised). */
  readonly ecosystems: readonly string[];
  /** `detected`: the defaults of those ecosystems; `config`: the build's configuration gave them. */
  readonly source: 'detected' | 'config';
}

interface Ecosystem {
  /** Files at the repository's root that show it. */
  readonly markers: readonly string[];
  /** Verification programs (argv[0]'s base name) that show it. */
  readonly programs: readonly string[];
  readonly files: readonly string[];
  readonly tests: readonly string[];
}

const NPM_KEYS = [
  'scripts', 'dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies', 'bundleDependencies', 'bundledDependencies',
  'overrides', 'resolutions', 'workspaces', 'packageManager', 'mocha', 'jest', 'ava', 'tap', 'c8', 'nyc', 'babel',
];

/**
 * The defaults of each ecosystem (decision 0036 says why each is there): the configuration its
 * test runners and package managers read, and where its tests live.
 */
export const ECOSYSTEMS: Readonly<Record<string, Ecosystem>> = {
  npm: {
    markers: ['package.json'],
    programs: ['npm', 'npx', 'node', 'yarn', 'pnpm', 'bun', 'mocha', 'tape', 'tap', 'jest', 'vitest', 'ava', 'c8', 'nyc'],
    files: [
      ...NPM_KEYS.map((k) => `package.json#${k}`),
      'package-lock.json', 'npm-shrinkwrap.json', 'yarn.lock', 'pnpm-lock.yaml', 'pnpm-workspace.yaml', 'bun.lockb', 'bun.lock',
      '.npmrc', '.yarnrc', '.yarnrc.yml', '.pnpmfile.cjs', '.mocharc*', '.taprc', '.c8rc*', '.nycrc*',
      'jest.config.*', 'vitest.config.*', 'vitest.workspace.*', 'vite.config.*', 'ava.config.*', 'karma.conf.*', 'babel.config.*', '.babelrc*',
      'node_modules/**',
    ],
    tests: ['test/**', 'tests/**', '__tests__/**', 'spec/**', '**/*.test.*', '**/*.spec.*'],
  },
  python: {
    markers: ['pyproject.toml', 'setup.py', 'setup.cfg', 'pytest.ini', 'tox.ini', 'requirements.txt'],
    programs: ['pytest', 'py.test', 'python', 'python3', 'tox', 'nox', 'uv', 'poetry', 'hatch'],
    files: [
      'pytest.ini', 'tox.ini', 'noxfile.py', '**/conftest.py', 'setup.cfg#[tool:pytest]', 'pyproject.toml#[tool.pytest]',
      'requirements*.txt', 'poetry.lock', 'uv.lock', 'Pipfile', 'Pipfile.lock',
    ],
    tests: ['tests/**', 'test/**', '**/test_*.py', '**/*_test.py'],
  },
  go: {
    markers: ['go.mod'],
    programs: ['go', 'gotestsum'],
    files: ['go.mod', 'go.sum', 'go.work', 'go.work.sum'],
    tests: ['**/*_test.go', '**/testdata/**'],
  },
  rust: {
    markers: ['Cargo.toml'],
    programs: ['cargo', 'cargo-nextest'],
    files: ['**/Cargo.toml', 'Cargo.lock', '.cargo/**', 'rust-toolchain', 'rust-toolchain.toml', '**/build.rs', '.config/nextest.toml'],
    tests: ['tests/**', '**/tests/**'],
  },
  make: {
    markers: ['Makefile', 'makefile', 'GNUmakefile'],
    programs: ['make', 'gmake'],
    files: ['Makefile', 'makefile', 'GNUmakefile', '**/*.mk'],
    tests: [],
  },
};

/**
 * The surface a build gets when its configuration does not give one (R-48): the defaults of every
 * ecosystem its base head's root files or its verification programs show, the in-tree files a
 * verification command names, and the report files it reads. `given` (the config's
 * `verificationSurface` and `tests`) replaces the detected files and tests respectively.
 */
export function detectSurface(
  rootFiles: readonly string[], verify: readonly (readonly string[])[], extra: readonly string[],
  given: { readonly files?: readonly string[]; readonly tests?: readonly string[] } = {},
): VerificationSurface {
  const root = new Set(rootFiles);
  const programs = new Set(verify.map((argv) => (argv[0] ?? '').split('/').pop()!));
  const ecosystems = Object.entries(ECOSYSTEMS)
    .filter(([, e]) => e.markers.some((m) => root.has(m)) || e.programs.some((p) => programs.has(p)))
    .map(([name]) => name);
  const unique = (xs: readonly string[]) => [...new Set(xs)];
  const files = given.files ?? ecosystems.flatMap((n) => ECOSYSTEMS[n]!.files);
  const tests = given.tests ?? ecosystems.flatMap((n) => ECOSYSTEMS[n]!.tests);
  return {
    files: unique([...files, ...extra]),
    tests: unique(tests),
    ecosystems,
    source: given.files !== undefined || given.tests !== undefined ? 'config' : 'detected',
  };
}

/** Part of a file a surface entry protects: a top-level key of a JSON file, or a TOML/INI section and those under it. */
export type SurfacePart = { readonly kind: 'key'; readonly key: string } | { readonly kind: 'section'; readonly prefix: string };

/** A surface entry parsed: its glob and the part of the file it protects (null: all of it). */
export interface SurfaceEntry {
  readonly entry: string;
  readonly glob: string;
  readonly part: SurfacePart | null;
}

/** Why a surface entry or test glob is not usable, or null (R-28: refused at init with this line). */
export function surfaceEntryProblem(entry: string): string | null {
  const hash = entry.indexOf('#');
  const glob = hash < 0 ? entry : entry.slice(0, hash);
  if (glob === '') return 'an empty path';
  if (glob.startsWith('/') || glob.split('/').includes('..')) return 'a path outside the repository (relative paths only, no `..`)';
  if (/[\u0000-\u001f]/.test(entry)) return 'a control character';
  if (hash >= 0) {
    const part = entry.slice(hash + 1);
    if (part === '' || (part.startsWith('[') && !/^\[[^\]]+\]$/.test(part))) return `'#${part}' names no key (#KEY) or section (#[SECTION])`;
  }
  return null;
}

export function parseSurfaceEntry(entry: string): SurfaceEntry {
  const hash = entry.indexOf('#');
  if (hash < 0) return { entry, glob: entry, part: null };
  const part = entry.slice(hash + 1);
  return {
    entry, glob: entry.slice(0, hash),
    part: part.startsWith('[') ? { kind: 'section', prefix: part.slice(1, -1) } : { kind: 'key', key: part },
  };
}

/** The surface compiled for matching paths (dot files match `*` and `**`). */
export interface SurfaceMatcher {
  /** The entries of the surface that apply to `path` (its whole file or parts of it). */
  entriesFor(path: string): SurfaceEntry[];
  /** True when `path` is a test file (a test glob matches it). */
  isTest(path: string): boolean;
}

export function surfaceMatcher(surface: Pick<VerificationSurface, 'files' | 'tests'>): SurfaceMatcher {
  // A build checks every candidate against the same surface: its globs are compiled once.
  const known = compiled.get(surface);
  if (known !== undefined) return known;
  const made = compileSurface(surface);
  compiled.set(surface, made);
  return made;
}

const compiled = new WeakMap<object, SurfaceMatcher>();

function compileSurface(surface: Pick<VerificationSurface, 'files' | 'tests'>): SurfaceMatcher {
  const opts = { dot: true };
  const entries = surface.files.map((e) => ({ ...parseSurfaceEntry(e), match: picomatch(parseSurfaceEntry(e).glob, opts) }));
  const tests = surface.tests.length === 0 ? () => false : picomatch([...surface.tests], opts);
  return {
    entriesFor: (path) => entries.filter((e) => e.match(path)).map(({ match: _m, ...e }) => e),
    isTest: (path) => tests(path),
  };
}

/**
 * The verification surface a candidate is checked against (R-49), and what its node's plan lets
 * it change there.
 */
export interface SurfaceJudgement {
  readonly surface: Pick<VerificationSurface, 'files' | 'tests'>;
  readonly allow: { readonly tests: boolean; readonly verification: boolean };
}

/** The judgement of a node's candidates under a build's surface (null: the build has no test policy). */
export function surfaceJudgement(surface: Pick<VerificationSurface, 'files' | 'tests'> | undefined, changes: readonly ChangeKind[] | undefined): SurfaceJudgement | undefined {
  if (surface === undefined) return undefined;
  return { surface, allow: { tests: changes?.includes('tests') === true, verification: changes?.includes('verification') === true } };
}

/** How a candidate changed a path (against its base head). */
export type PathChangeKind = 'added' | 'modified' | 'deleted';

/** One way a candidate touches the surface (R-49): what it is and what would allow it. */
export interface SurfaceTouch {
  readonly kind: ChangeKind;
  readonly path: string;
  /** What of it changed: `scripts` of package.json, `[tool.pytest]` of pyproject.toml (absent: the file). */
  readonly part?: string;
  readonly change: PathChangeKind;
}

/**
 * How a change to `path` touches the surface: existing tests modified or deleted (a new test
 * file never does), surface files added, modified or deleted — narrowed to the parts an entry
 * names, which `partsChanged` decides from the two texts (null when the file is absent).
 */
export function touchesOf(
  m: SurfaceMatcher, path: string, change: PathChangeKind,
  texts: () => { readonly base: string | null; readonly candidate: string | null },
): SurfaceTouch[] {
  const entries = m.entriesFor(path);
  if (entries.some((e) => e.part === null)) return [{ kind: 'verification', path, change }];
  if (entries.length > 0) {
    const t = texts();
    const changed = partsChanged(t.base, t.candidate, entries.map((e) => e.part!));
    if (changed.length > 0) return changed.map((part) => ({ kind: 'verification' as const, path, part, change }));
  }
  if (change !== 'added' && m.isTest(path)) return [{ kind: 'tests', path, change }];
  return [];
}

/**
 * Which of `parts` differ between two texts of a file (null: the file is absent). A JSON key is
 * compared by value (key order and white space do not count); a section by its lines. A file that
 * is not JSON where a key is protected counts as changing every key it names (unless both are the
 * same bytes).
 */
export function partsChanged(base: string | null, candidate: string | null, parts: readonly SurfacePart[]): string[] {
  if (base === candidate) return [];
  const out: string[] = [];
  const jsonBase = parseJsonObject(base);
  const jsonCand = parseJsonObject(candidate);
  for (const p of parts) {
    if (p.kind === 'key') {
      const a = jsonBase === undefined ? Symbol('unreadable') : stableJson(jsonBase?.[p.key]);
      const b = jsonCand === undefined ? Symbol('unreadable') : stableJson(jsonCand?.[p.key]);
      if (a !== b) out.push(p.key);
    } else if (sectionText(base, p.prefix) !== sectionText(candidate, p.prefix)) {
      out.push(`[${p.prefix}]`);
    }
  }
  return [...new Set(out)];
}

/** A JSON object's members (null: the file is absent; undefined: not a JSON object). */
function parseJsonObject(text: string | null): Record<string, unknown> | null | undefined {
  if (text === null) return null;
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** JSON with object keys sorted (absent: a marker no JSON text can be). */
function stableJson(v: unknown): string {
  if (v === undefined) return '\u0000absent';
  return JSON.stringify(v, (_k, x: unknown) => (x !== null && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x));
}

/**
 * The lines of every TOML/INI section named `prefix` or under it (`[tool.pytest]`,
 * `[tool.pytest.ini_options]`), trailing white space and blank lines dropped; '' when none.
 */
export function sectionText(text: string | null, prefix: string): string {
  if (text === null) return '';
  const out: string[] = [];
  let inside = false;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trimEnd();
    const header = /^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$/.exec(line);
    if (header) inside = header[1] === prefix || header[1]!.startsWith(`${prefix}.`);
    if (inside && line.trim() !== '') out.push(line);
  }
  return out.join('\n');
}

/** One line for a refusal (R-49): what was touched, and what the plan may declare to allow it. */
export function touchesReason(touches: readonly SurfaceTouch[]): string {
  const show = (t: SurfaceTouch) => `${t.change === 'added' ? 'adds' : t.change === 'deleted' ? 'deletes' : 'changes'} ${t.part !== undefined ? `${t.part} of ` : ''}'${t.path}'`;
  const kinds = [...new Set(touches.map((t) => t.kind))].sort();
  const first = touches.slice(0, 4).map(show).join(', ');
  const more = touches.length > 4 ? ` and ${touches.length - 4} more` : '';
  const what = kinds.map((k) => (k === 'tests' ? 'existing tests' : 'the verification surface')).join(' and ');
  return `the candidate ${first}${more}: ${what} may change only where the node's plan declares it ("changes": [${kinds.map((k) => `"${k}"`).join(', ')}])`;
}
