/**
 * How a build is driven (a blueprint, or a request and a config of real commands): the driver
 * file `init` writes as `<dir>/driver.json` and every open reads back against the SHA-256 pinned
 * in BuildInitialized, and what a driver records in the log (the request, verification,
 * acceptance and settings).
 */
import { existsSync, readFileSync } from 'node:fs';
import { canonicalJson, type JsonValue } from '../events/canonical.js';
import type { BuildSettings } from '../events/catalogue.js';
import { CorruptLogError, ValidationError } from '../events/errors.js';
import { sha256Hex } from '../events/hash.js';
import { compactBlueprint, loadBlueprint, parseBlueprint, refuseUnplannableIds, type Blueprint } from './blueprint/blueprint.js';
import type { BuildPaths } from './build-dir.js';
import { defaultRoute } from './command/invocation.js';
import { loadConfig, parseConfig, type LongbuildConfig } from './config/config.js';
import { readJsonFile } from './json-file.js';
import { argvsOf, testPolicyInput, type TestPolicyInput } from './verify-commands.js';

/**
 * How the build is driven, stored as `<dir>/driver.json` when it is initialised; its SHA-256 is
 * pinned in BuildInitialized, so a changed driver file is refused on open.
 */
export type DriverFile =
  | { readonly kind: 'blueprint'; readonly blueprint: Blueprint }
  | { readonly kind: 'command'; readonly config: LongbuildConfig; readonly request: JsonValue };

function blueprintSettings(bp: Blueprint): BuildSettings {
  return {
    detailedWindow: bp.detailedWindow,
    coarseWindow: bp.coarseWindow ?? 12,
    maxBatch: bp.maxBatch ?? 1,
    maxAttempts: bp.maxAttempts ?? 3,
    compaction: bp.compaction ?? true,
    plannerRoute: 'scripted:blueprint',
    ...parallelSettings(bp.concurrency ?? 1, bp.speculation),
    ...(bp.acceptanceRepairs !== undefined ? { acceptanceRepairs: bp.acceptanceRepairs } : {}),
    ...setupSetting(bp.setup ?? []),
    trailers: {},
    // An install leaves node_modules/: allowed by default where there is setup (dirty, as before, where not).
    ...((bp.ignoredFiles ?? ((bp.setup ?? []).length > 0 ? 'allowed' : 'dirty')) === 'allowed' ? { ignoredFiles: 'allowed' as const } : {}),
  };
}

/** The count of setup commands a build records (R-57), only when there are some. */
const setupSetting = (setup: readonly unknown[]): Pick<BuildSettings, 'setup'> => (setup.length > 0 ? { setup: setup.length } : {});

/**
 * Concurrency and speculation as a build records them: only when above 1, so a build of one
 * worker at a time keeps the bytes it always had. Speculation defaults to the concurrency.
 */
function parallelSettings(concurrency: number, speculation: number | undefined): Pick<BuildSettings, 'concurrency' | 'speculation'> {
  const s = speculation ?? concurrency;
  return { ...(concurrency > 1 ? { concurrency } : {}), ...(s > 1 ? { speculation: s } : {}) };
}

function configSettings(c: LongbuildConfig): BuildSettings {
  return {
    detailedWindow: c.detailedWindow,
    coarseWindow: c.coarseWindow,
    maxBatch: c.maxBatch,
    maxAttempts: c.maxAttempts,
    compaction: c.compaction,
    plannerRoute: c.planner.route ?? defaultRoute(c.planner),
    plannerAsks: c.planner.asks,
    ignoredFiles: c.ignoredFiles,
    ...parallelSettings(c.concurrency, c.speculation),
    ...(c.acceptance.length > 0 || repairsHeads(c.approve) ? { acceptanceRepairs: c.acceptanceRepairs } : {}),
    ...setupSetting(c.setup),
    ...(c.budget !== undefined ? { budget: c.budget } : {}),
    ...(c.approve !== undefined ? { approve: [...new Set(c.approve)] } : {}),
    ...(c.notify !== undefined ? { notify: c.notify } : {}),
    trailers: c.worker.agent !== undefined ? { assistedBy: `${c.worker.agent}${c.worker.model !== undefined ? ` (${c.worker.model})` : ''}` } : {},
  };
}

/** What a driver sets in the log: the request, verification, acceptance and settings it gives (BuildInitialized, a fork's ForkedFrom). */
export interface DriverRecord {
  readonly request: JsonValue;
  readonly verify: readonly (readonly string[])[];
  /** Empty: none. */
  readonly acceptance: readonly (readonly string[])[];
  readonly settings: BuildSettings;
  /** How its tests are judged (R-48..R-51); the surface is detected from the base head at init. */
  readonly tests: TestPolicyInput;
}

export function driverRecord(driver: DriverFile): DriverRecord {
  if (driver.kind === 'blueprint') {
    const bp = driver.blueprint;
    const setup = bp.setup ?? [];
    const acceptance = (bp.acceptance ?? []).length > 0 ? [...setup, ...bp.acceptance!] : [];
    return withRepairs({ request: bp.request as JsonValue, verify: [...setup, ...argvsOf(bp.verify)], acceptance, settings: blueprintSettings(bp), tests: testPolicyInput(bp, setup.length, bp.verify) });
  }
  const config = driver.config;
  // Acceptance runs after the same setup as verification (an install), in a workspace of its own.
  const acceptance = config.acceptance.length > 0 ? [...config.setup, ...config.acceptance] : [];
  return withRepairs({
    request: driver.request, verify: [...config.setup, ...argvsOf(config.verify)], acceptance, settings: configSettings(config),
    tests: testPolicyInput(config, config.setup.length, config.verify),
  });
}

/** Gates whose rejection opens a repair window (R-60): a build with them records its repair windows. */
const repairsHeads = (approve: readonly string[] | undefined): boolean => approve !== undefined && approve.some((g) => g !== 'plan');

/** A build with acceptance commands or head gates records its repair windows (default 2). */
const withRepairs = (r: DriverRecord): DriverRecord =>
  r.acceptance.length > 0 || repairsHeads(r.settings.approve) ? { ...r, settings: { ...r.settings, acceptanceRepairs: r.settings.acceptanceRepairs ?? 2 } } : r;

/** The driver of a blueprint file. */
export function blueprintDriver(path: string): DriverFile {
  const blueprint = loadBlueprint(path);
  refuseUnplannableIds(blueprint, path);
  return { kind: 'blueprint', blueprint };
}

/** The driver of a request file and a config file, each checked with one clear line on failure. */
export function requestDriver(requestPath: string, configPath: string): DriverFile {
  const request = readJsonFile(requestPath, 'request file');
  if (request === null || typeof request !== 'object' || Array.isArray(request)) {
    throw new ValidationError(`request file ${requestPath} must hold a JSON object (the project request)`);
  }
  canonicalJson(request); // refuses non-canonical numbers early, with the path
  return { kind: 'command', config: loadConfig(configPath), request: request as JsonValue };
}

/** The driver file of an initialised build, refused unless it is the one its log pinned. */
export function readDriver(paths: BuildPaths, pinnedSha256: string): DriverFile {
  if (!existsSync(paths.driver)) throw new CorruptLogError(1, `${paths.driver} is missing: the build directory is incomplete`);
  const text = readFileSync(paths.driver, 'utf8');
  if (sha256Hex(text) !== pinnedSha256) {
    throw new CorruptLogError(1, `${paths.driver} does not match the SHA-256 pinned when the build was initialised (edited?)`);
  }
  const raw = JSON.parse(text) as { kind: string; blueprint?: unknown; config?: unknown; request?: JsonValue };
  if (raw.kind === 'blueprint') return { kind: 'blueprint', blueprint: compactBlueprint(parseBlueprint(raw.blueprint, paths.driver)) };
  if (raw.kind === 'command') return { kind: 'command', config: parseConfig(raw.config, paths.driver), request: raw.request ?? null };
  throw new ValidationError(`unknown build driver '${raw.kind}' in ${paths.driver}`);
}
