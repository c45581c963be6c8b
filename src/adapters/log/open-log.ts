import type { EventCatalogue } from '../../events/catalogue.js';
import { NotFoundError, ValidationError } from '../../events/errors.js';
import { SqliteLogReader } from './sqlite-log-reader.js';
import type { TransferableEventLog } from './verbatim.js';
import type { AppendFence } from './postgres-log.js';

export interface OpenLogOptions {
  readonly catalogue?: EventCatalogue;
  /** The file a bare `sqlite` spec means (the build directory's events database). */
  readonly defaultSqlitePath?: string;
  readonly synchronous?: 'FULL' | 'NORMAL';
  /** PostgreSQL schema for this build's log (also `?schema=` on the URL). */
  readonly postgresSchema?: string;
  /** EventStoreDB stream for this build's log (also `?stream=` on the URL). */
  readonly eventstoreStream?: string;
  /** PostgreSQL: checked inside every append transaction (the controller lease's fencing token). */
  readonly postgresFence?: AppendFence;
  /**
   * Only read (a reading command): an SQLite log is opened without its append path — no event
   * schemas loaded (decision 0022), appends refused. Other backends open as usual.
   */
  readonly reading?: boolean;
}

export const LOG_SPEC_HELP = "log backend must be 'sqlite', 'sqlite:PATH', 'postgres:postgres://USER:PASS@HOST:PORT/DB[?schema=NAME]' or 'eventstore:esdb://HOST:PORT?tls=false[&stream=NAME]'";

/**
 * Open the event log a config names: `sqlite` / `sqlite:PATH` (the default, embedded),
 * `postgres:URL`, `eventstore:URL`. Projections stay in local SQLite whatever the log is.
 */
export async function openEventLog(spec: string, opts: OpenLogOptions = {}): Promise<TransferableEventLog> {
  const catalogue = opts.catalogue ? { catalogue: opts.catalogue } : {};
  const sqlite = async (path: string): Promise<TransferableEventLog> => {
    if (opts.reading === true) return new SqliteLogReader({ path });
    // Loaded only to write: the append path brings the event schemas (zod).
    const { SqliteEventLog } = await import('./sqlite-log.js');
    return new SqliteEventLog({ path, ...catalogue, ...(opts.synchronous ? { synchronous: opts.synchronous } : {}) });
  };
  if (spec === 'sqlite' || spec === '') {
    if (!opts.defaultSqlitePath) throw new ValidationError(`'sqlite' needs a path here: ${LOG_SPEC_HELP}`);
    return sqlite(opts.defaultSqlitePath);
  }
  const colon = spec.indexOf(':');
  const scheme = colon < 0 ? spec : spec.slice(0, colon);
  const rest = colon < 0 ? '' : spec.slice(colon + 1);
  switch (scheme) {
    case 'sqlite':
      if (!rest) throw new ValidationError(`empty SQLite path: ${LOG_SPEC_HELP}`);
      return sqlite(rest);
    case 'postgres':
    case 'postgresql': {
      const { url, schema } = postgresTarget(spec, opts)!;
      // Loaded only for a remote log: the drivers cost hundreds of ms at start-up.
      const { PostgresEventLog } = await import('./postgres-log.js');
      return PostgresEventLog.open({ url, schema, ...(opts.postgresFence ? { fence: opts.postgresFence } : {}), ...catalogue });
    }
    case 'eventstore': {
      const { url, param } = splitParam(rest, /^esdb(\+discover)?:\/\//, 'stream', spec);
      const stream = param ?? opts.eventstoreStream;
      const EventStoreEventLog = await eventStoreAdapter();
      return new EventStoreEventLog({ url, ...(stream ? { stream } : {}), ...catalogue });
    }
    default:
      throw new ValidationError(`unknown log backend ${JSON.stringify(spec)}: ${LOG_SPEC_HELP}`);
  }
}

/**
 * The EventStoreDB client (~11 MB with gRPC and protobufjs) is an optional peer dependency that
 * few builds need: loaded on first use, and named with the command that installs it when missing.
 */
async function eventStoreAdapter(): Promise<typeof import('./eventstore-log.js').EventStoreEventLog> {
  try {
    const { EventStoreEventLog, loadEventStoreClient } = await import('./eventstore-log.js');
    loadEventStoreClient();
    return EventStoreEventLog;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if ((code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') || !String((e as Error).message).includes('@eventstore/db-client')) throw e;
    throw new NotFoundError('an eventstore: log needs the EventStoreDB client, which is not installed: run `npm i @eventstore/db-client` where longbuild is installed');
  }
}

/** The server URL and schema a `postgres:` spec names (null for any other backend). */
export function postgresTarget(spec: string, opts: Pick<OpenLogOptions, 'postgresSchema'> = {}): { url: string; schema: string } | null {
  const m = /^(postgres|postgresql):(.*)$/s.exec(spec);
  if (!m) return null;
  const { url, param } = splitParam(m[2]!, /^postgres(ql)?:\/\//, 'schema', spec);
  return { url, schema: param ?? opts.postgresSchema ?? 'longbuild' };
}

/** Check the URL's scheme and take our own query parameter off it (drivers may refuse unknown ones). */
function splitParam(raw: string, scheme: RegExp, name: string, spec: string): { url: string; param: string | undefined } {
  if (!scheme.test(raw)) throw new ValidationError(`bad log URL in ${JSON.stringify(redact(spec))}: ${LOG_SPEC_HELP}`);
  if (!new RegExp(`[?&]${name}=`).test(raw)) return { url: raw, param: undefined };
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ValidationError(`unparseable log URL in ${JSON.stringify(redact(spec))}: ${LOG_SPEC_HELP}`);
  }
  const param = parsed.searchParams.get(name) ?? undefined;
  if (param === undefined) return { url: raw, param };
  parsed.searchParams.delete(name);
  return { url: parsed.toString(), param };
}

/** Never echo a password back in an error message. */
export function redact(spec: string): string {
  return spec.replace(/\/\/([^:/@]+):[^@/]*@/, '//$1:***@');
}
