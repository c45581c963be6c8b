/**
 * The compact row form of the embedded log (decision 0024). A row appended by a controller step
 * stores its two JSON texts as one deflate stream (`data` column: a BLOB, first byte the codec;
 * `metadata` column empty) and its two SHA-256s as 32-byte BLOBs; a row stored in bulk (a batch
 * append of 64 or more events, a verbatim import) stays text, so batch throughput is unchanged.
 * A row is self-describing: readers take both forms, old logs need no migration, and what is
 * hashed (R-2: the canonical texts) is the same either way — only the stored bytes differ.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { CorruptLogError } from '../../events/errors.js';

/** Codec byte of a compact body: deflate-raw, 4 KiB window, preset dictionary 1 plus the row's stream id. */
export const CODEC_DEFLATE_DICT_1 = 1;
/**
 * Codec byte 2: the body as codec 1's, in a row that also stores its stream id and type as keys
 * into `row_names` and its previous hash as an empty BLOB, the hash of the row before it
 * (decision 0034). The body alone is read as codec 1's; the byte is new so that a version that
 * cannot resolve those columns refuses the row (unknown codec: upgrade) instead of misreading it.
 */
export const CODEC_DEFLATE_DICT_2 = 2;

/**
 * Dictionary 1: one short sample of each event type as a build writes it (hashes, commits and
 * build ids blanked), rarest first. Fixed forever: rows written with it are read with it
 * (test/log-row-codec.test.ts pins its SHA-256); a better one gets a new codec byte.
 */
const DICTIONARY_1 = Buffer.from([
  "427ae41e4649b934ca495991b7852b855\"],\"jobId\":\"job-1\",\"nodeIds\":[\"package\"],\"resultCommit\":\"\",\"tree\":\"\"}}\n{\"caus",
  "ationId\":\"job-1\",\"correlationId\":\"\",\"graph\":{\"revision\":4,\"sha256\":\"\"},\"recordedAt\":\"2026-01-01T00:00:09.000Z\"",
  "}{\"baseHead\":\"\",\"candidates\":[{\"attemptId\":\"package.1\",\"commit\":\"\",\"nodeId\":\"package\"}],\"graphRevision\":3,\"job",
  "Id\":\"job-1\",\"nodeIds\":[\"package\"]}\n{\"causationId\":\"job-1\",\"correlationId\":\"\",\"recordedAt\":\"2026-01-01T00:00:07",
  ".000Z\"}{\"evidence\":[{\"argv\":[\"node\",\"-e\",\"const fs = require('fs'); for (const f of fs.existsSync('test') ? fs",
  ".readdirSync('test').sort() : []) if (f.endsWith('.test.js')) require('./test/' + f);\"],\"cacheHit\":false,\"dura",
  "tionMs\":39,\"exitCode\":0,\"stderrSha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\",\"std",
  "outSha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}],\"evidenceSha256\":\"\",\"graphRevi",
  "sion\":3,\"jobId\":\"job-1\",\"passed\":true,\"resultCommit\":\"\",\"tree\":\"\"}\n{\"callId\":\"plan.renew.1\",\"coarse\":[{\"id\":\"m",
  "4\",\"title\":\"Milestone 4\"},{\"id\":\"m5\",\"title\":\"Milestone 5\"},{\"id\":\"m6\",\"title\":\"Milestone 6\"},{\"id\":\"m7\",\"titl",
  "e\":\"Milestone 7\"},{\"id\":\"m8\",\"title\":\"Milestone 8\"},{\"id\":\"m9\",\"title\":\"Milestone 9\"},{\"id\":\"m10\",\"title\":\"Mil",
  "estone 10\"},{\"id\":\"m11\",\"title\":\"Milestone 11\"},{\"id\":\"m12\",\"title\":\"Milestone 12\"},{\"id\":\"m13\",\"title\":\"Miles",
  "tone 13\"},{\"id\":\"m14\",\"title\":\"Milestone 14\"},{\"id\":\"m15\",\"title\":\"Milestone 15\"}],\"detailed\":[{\"id\":\"m2\",\"tit",
  "le\":\"Milestone 2\"{\"callId\":\"plan.seal.0\",\"graphRevision\":0,\"horizonRevision\":0,\"purpose\":\"seal\"}\n{\"causationId",
  "\":\"plan.seal.0\",\"correlationId\":\"\",\"recordedAt\":\"2026-01-01T00:00:02.000Z\"}{\"callId\":\"plan.seal.0\",\"graphRevis",
  "ion\":0,\"inputSha256\":\"\",\"proposal\":{\"coarse\":[{\"id\":\"m2\",\"title\":\"Milestone 2\"},{\"id\":\"m3\",\"title\":\"Milestone ",
  "3\"},{\"id\":\"m4\",\"title\":\"Milestone 4\"},{\"id\":\"m5\",\"title\":\"Milestone 5\"},{\"id\":\"m6\",\"title\":\"Milestone 6\"},{\"id",
  "\":\"m7\",\"title\":\"Milestone 7\"},{\"id\":\"m8\",\"title\":\"Milestone 8\"},{\"id\":\"m9\",\"title\":\"Milestone 9\"},{\"id\":\"m10\",",
  "\"title\":\"Milestone 10\"},{\"id\":\"m11\",\"title\":\"Milestone 11\"},{\"id\":\"m12\",\"title\":\"Milestone 12\"},{\"id\":\"m13\",\"t",
  "itle\":\"Milestone 13\"}],\"d{\"checkpoint\":{\"acceptedNodes\":[{\"commit\":null,\"id\":\"m0-n0\",\"kind\":\"read-only\"},{\"com",
  "mit\":null,\"id\":\"m0-n1\",\"kind\":\"read-only\"},{\"commit\":null,\"id\":\"m0-n10\",\"kind\":\"read-only\"},{\"commit\":null,\"id",
  "\":\"m0-n11\",\"kind\":\"read-only\"},{\"commit\":null,\"id\":\"m0-n12\",\"kind\":\"read-only\"},{\"commit\":null,\"id\":\"m0-n13\",\"",
  "kind\":\"read-only\"},{\"commit\":null,\"id\":\"m0-n14\",\"kind\":\"read-only\"},{\"commit\":null,\"id\":\"m0-n15\",\"kind\":\"read-",
  "only\"},{\"commit\":null,\"id\":\"m0-n16\",\"kind\":\"read-only\"},{\"commit\":null,\"id\":\"m0-n17\",{\"graphRevision\":41,\"summ",
  "ary\":{\"absorbedSummaryIds\":[],\"acceptedCommits\":[],\"boundary\":[],\"checkpoint\":{\"milestoneId\":\"m0\",\"sha256\":\"\"}",
  ",\"compactedNodeIds\":[\"m0-n0\",\"m0-n1\",\"m0-n10\",\"m0-n11\",\"m0-n12\",\"m0-n13\",\"m0-n14\",\"m0-n15\",\"m0-n16\",\"m0-n17\",\"",
  "m0-n18\",\"m0-n19\",\"m0-n2\",\"m0-n3\",\"m0-n4\",\"m0-n5\",\"m0-n6\",\"m0-n7\",\"m0-n8\",\"m0-n9\"],\"completedAt\":\"2026-01-01T00",
  ":00:46.000Z\",\"contracts\":[],\"decisions\":[{\"decision\":\"ok\",\"nodeId\":\"m0-n0\"},{\"decision\":\"ok\",\"nodeId\":\"m0-n1\"}",
  ",{\"decision\":\"ok\",\"nodeId\":\"m0-n10\"{\"attempt\":1,\"attemptId\":\"m0-n0.1\",\"baseHead\":\"\",\"branch\":\"refs/heads/longb",
  "uild/attempts/m0-n0.1\",\"graphRevision\":1,\"nodeId\":\"m0-n0\"}\n{\"causationId\":\"m0-n0.1\",\"correlationId\":\"\",\"graph\"",
  ":{\"revision\":2,\"sha256\":\"\"},\"recordedAt\":\"2026-01-01T00:00:05.000Z\"}{\"adopted\":false,\"attemptId\":\"m0-n0.1\",\"de",
  "cision\":\"ok\",\"evidenceSha256\":\"\",\"graphRevision\":2,\"inputSha256\":\"\",\"nodeId\":\"m0-n0\",\"outcome\":\"recorded\",\"std",
  "errSha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\",\"stdoutSha256\":\"e3b0c44298fc1c14",
  "9afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}\n{\"causationId\":\"m0-n0.1\",\"correlationId\":\"\",\"graph\":{\"revis",
  "ion\":3,\"sha256\":\"\"},\"recordedAt\":\"2026-01-01T00:00:06.000Z\"}",
].join(''), 'latin1');

/** SQL giving a hash column as lowercase hex whichever form the row stores (single-value reads: the head, hash pages). */
export function hexSql(column: string): string {
  return `iif(typeof(${column}) = 'blob', lower(hex(${column})), ${column})`;
}

const WINDOW_BITS = 12;
const NEWLINE = 0x0a;

/** The last stream's dictionary: a build's log has one stream, so every row reuses it (3.8 KB not copied per row). */
let lastDictionary = { streamId: '', bytes: DICTIONARY_1 };

function dictionaryFor(streamId: string): Buffer {
  if (lastDictionary.streamId !== streamId) lastDictionary = { streamId, bytes: Buffer.concat([DICTIONARY_1, Buffer.from(streamId, 'utf8')]) };
  return lastDictionary.bytes;
}

/** The compact body of one row: the codec byte, then `data` and `metadata` (canonical JSON, never a raw newline) deflated together. */
export function encodeBody(dataJson: string, metadataJson: string, streamId: string, codec: typeof CODEC_DEFLATE_DICT_1 | typeof CODEC_DEFLATE_DICT_2 = CODEC_DEFLATE_DICT_1): Buffer {
  const deflated = deflateRawSync(Buffer.from(`${dataJson}\n${metadataJson}`, 'utf8'), { level: 6, windowBits: WINDOW_BITS, memLevel: 4, dictionary: dictionaryFor(streamId) });
  const out = Buffer.allocUnsafe(deflated.length + 1);
  out[0] = codec;
  deflated.copy(out, 1);
  return out;
}

/** The `data` and `metadata` texts of a stored row (as stored, or decoded), or why a compact body cannot be read. */
export function readTexts(data: string | Buffer, metadata: string, streamId: string): [string, string] | string {
  if (typeof data === 'string') return [data, metadata];
  if (metadata !== '') return 'compact row holds text in its metadata column (edited)';
  if (data.length === 0) return 'stored row body is empty (edited or damaged)';
  if (data[0] !== CODEC_DEFLATE_DICT_1 && data[0] !== CODEC_DEFLATE_DICT_2) return `stored row body has codec ${data[0]}, which this longbuild cannot read (a newer version wrote it: upgrade), or the row is damaged`;
  let text: Buffer;
  try {
    text = inflateRawSync(data.subarray(1), { windowBits: WINDOW_BITS, dictionary: dictionaryFor(streamId) });
  } catch {
    return 'stored row body does not decode (edited or damaged)';
  }
  const cut = text.indexOf(NEWLINE);
  if (cut < 0) return 'stored row body does not decode (edited or damaged)';
  return [text.toString('utf8', 0, cut), text.toString('utf8', cut + 1)];
}

/** As `readTexts`; a body that does not decode is a corrupt log at `position`, in one line. */
export function decodeTexts(data: string | Buffer, metadata: string, streamId: string, position: number): [string, string] {
  const texts = readTexts(data, metadata, streamId);
  if (typeof texts === 'string') throw new CorruptLogError(position, `${texts}; run \`longbuild verify\``);
  return texts;
}

/** A stored hash as hex: text as it is, a compact row's 32 bytes converted. */
export function hexOf(stored: string | Buffer): string {
  return typeof stored === 'string' ? stored : stored.toString('hex');
}

/** A SHA-256 in hex as the 32 bytes a compact row stores. */
export function hashBytes(hex: string): Buffer {
  return Buffer.from(hex, 'hex');
}

/** Dictionary 1 as rows are deflated against it (before the stream id); a test pins its SHA-256. */
export function dictionary1(): Buffer {
  return DICTIONARY_1;
}
