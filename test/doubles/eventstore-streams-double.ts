/**
 * TEST DOUBLE — not EventStoreDB. A small in-memory gRPC server speaking the EventStoreDB
 * `event_store.client.streams.Streams` service (from the message and service definitions that
 * @eventstore/db-client ships in its `generated/` folder), so the EventStoreDB log adapter's code
 * paths can run on a machine where no EventStoreDB server can be installed. Passing against this
 * double proves the adapter speaks the client library correctly; it is NOT proof against a real
 * server (set LONGBUILD_EVENTSTORE_URL for that).
 *
 * Implemented: Read on a stream (forwards/backwards from start/end/revision with a count; stream
 * not found), Read as a catch-up subscription to a stream (confirmation, then events *after* the
 * given revision, then live appends — ESDB's exclusive start), and Append with expected revision
 * (any / no_stream / stream_exists / exact) answering WrongExpectedVersion like the server.
 * Not implemented (UNIMPLEMENTED): $all reads and subscriptions, filters, BatchAppend (the client
 * falls back to Append when ServerFeatures is unimplemented), Delete, Tombstone, links, ACLs.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import * as grpc from '@grpc/grpc-js';
import type * as StreamsGrpc from '@eventstore/db-client/generated/streams_grpc_pb.js';
import type * as StreamsPb from '@eventstore/db-client/generated/streams_pb.js';
import type * as SharedPb from '@eventstore/db-client/generated/shared_pb.js';

const require = createRequire(import.meta.url);
// The generated modules are CommonJS and must be the very instances the client uses.
const { StreamsService } = require('@eventstore/db-client/generated/streams_grpc_pb.js') as typeof StreamsGrpc;
const pb = require('@eventstore/db-client/generated/streams_pb.js') as typeof StreamsPb;
const shared = require('@eventstore/db-client/generated/shared_pb.js') as typeof SharedPb;

interface Stored {
  id: string;
  type: string;
  contentType: string;
  data: Uint8Array;
  customMetadata: Uint8Array;
  revision: number;
  commit: number;
  created: string;
}

type Listener = (e: Stored) => void;

export class EventStoreStreamsDouble {
  private readonly streams = new Map<string, Stored[]>();
  private readonly listeners = new Map<string, Set<Listener>>();
  private commit = 0;
  private server: grpc.Server | undefined;
  /** Requests served, by method (lets tests see what the adapter asked for). */
  readonly calls = { read: 0, subscribe: 0, append: 0 };

  /** Start on a free local port; resolves to an `esdb://` connection string for the client. */
  async start(): Promise<string> {
    const server = new grpc.Server();
    server.addService(StreamsService, {
      read: (call: grpc.ServerWritableStream<StreamsPb.ReadReq, StreamsPb.ReadResp>) => this.read(call),
      append: (call: grpc.ServerReadableStream<StreamsPb.AppendReq, StreamsPb.AppendResp>, cb: grpc.sendUnaryData<StreamsPb.AppendResp>) => this.append(call, cb),
      delete: (_c: unknown, cb: grpc.sendUnaryData<never>) => cb({ code: grpc.status.UNIMPLEMENTED, details: 'double: Delete not implemented' }, null),
      tombstone: (_c: unknown, cb: grpc.sendUnaryData<never>) => cb({ code: grpc.status.UNIMPLEMENTED, details: 'double: Tombstone not implemented' }, null),
      batchAppend: (call: grpc.ServerDuplexStream<unknown, unknown>) => call.destroy(Object.assign(new Error('double: BatchAppend not implemented'), { code: grpc.status.UNIMPLEMENTED })),
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    this.server = server;
    return `esdb://127.0.0.1:${port}?tls=false`;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
    server?.forceShutdown();
  }

  /** Append raw events straight into a stream, bypassing the client (tests plant foreign events). */
  plant(stream: string, e: { type: string; contentType?: string; data: Uint8Array; customMetadata?: Uint8Array }): void {
    this.store(stream, [{ id: randomUUID(), type: e.type, contentType: e.contentType ?? 'application/octet-stream', data: e.data, customMetadata: e.customMetadata ?? new Uint8Array() }]);
  }

  private store(stream: string, events: Array<Omit<Stored, 'revision' | 'commit' | 'created'>>): number {
    const list = this.streams.get(stream) ?? [];
    this.streams.set(stream, list);
    for (const e of events) {
      this.commit += 100;
      const stored: Stored = { ...e, revision: list.length, commit: this.commit, created: String(BigInt(Date.now()) * 10000n) };
      list.push(stored);
      for (const l of this.listeners.get(stream) ?? []) l(stored);
    }
    return list.length - 1;
  }

  private read(call: grpc.ServerWritableStream<StreamsPb.ReadReq, StreamsPb.ReadResp>): void {
    const options = call.request.getOptions();
    const streamOptions = options?.getStream();
    if (!options || !streamOptions) {
      call.destroy(Object.assign(new Error('double: only stream reads are implemented ($all is not)'), { code: grpc.status.UNIMPLEMENTED }));
      return;
    }
    const identifier = streamOptions.getStreamIdentifier()!;
    const name = Buffer.from(identifier.getStreamName_asU8()).toString('utf8');
    const list = this.streams.get(name) ?? [];
    const Case = pb.ReadReq.Options.StreamOptions.RevisionOptionCase;
    const revisionCase = streamOptions.getRevisionOptionCase();
    const sendEvent = (e: Stored) => call.write(new pb.ReadResp().setEvent(new pb.ReadResp.ReadEvent().setEvent(toRecorded(identifier, e)).setNoPosition(new shared.Empty())));

    if (options.hasSubscription()) {
      this.calls.subscribe += 1;
      call.write(new pb.ReadResp().setConfirmation(new pb.ReadResp.SubscriptionConfirmation().setSubscriptionId(randomUUID())));
      // ESDB starts a stream subscription after the given revision.
      let next = revisionCase === Case.START ? 0 : revisionCase === Case.END ? list.length : Number(streamOptions.getRevision()) + 1;
      const listener: Listener = (e) => {
        if (e.revision === next) {
          next += 1;
          sendEvent(e);
        }
      };
      for (; next < list.length; ) sendEvent(list[next++]!);
      call.write(new pb.ReadResp().setCaughtUp(new pb.ReadResp.CaughtUp()));
      const set = this.listeners.get(name) ?? new Set<Listener>();
      this.listeners.set(name, set);
      set.add(listener);
      const stop = () => set.delete(listener);
      call.on('cancelled', stop);
      call.on('close', stop);
      return;
    }

    this.calls.read += 1;
    if (!this.streams.has(name)) {
      call.write(new pb.ReadResp().setStreamNotFound(new pb.ReadResp.StreamNotFound().setStreamIdentifier(identifier)));
      call.end();
      return;
    }
    const count = Number(BigInt(options.getCount() || '0') > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : options.getCount());
    const backwards = options.getReadDirection() === pb.ReadReq.Options.ReadDirection.BACKWARDS;
    if (backwards) {
      let r = revisionCase === Case.START ? 0 : revisionCase === Case.END ? list.length - 1 : Math.min(Number(streamOptions.getRevision()), list.length - 1);
      for (let n = 0; n < count && r >= 0; n++, r--) sendEvent(list[r]!);
    } else {
      let r = revisionCase === Case.START ? 0 : revisionCase === Case.END ? list.length : Number(streamOptions.getRevision());
      for (let n = 0; n < count && r < list.length; n++, r++) sendEvent(list[r]!);
    }
    call.end();
  }

  private append(call: grpc.ServerReadableStream<StreamsPb.AppendReq, StreamsPb.AppendResp>, cb: grpc.sendUnaryData<StreamsPb.AppendResp>): void {
    this.calls.append += 1;
    let options: StreamsPb.AppendReq.Options | undefined;
    const proposed: Array<Omit<Stored, 'revision' | 'commit' | 'created'>> = [];
    call.on('data', (req: StreamsPb.AppendReq) => {
      if (req.hasOptions()) options = req.getOptions();
      const m = req.getProposedMessage();
      if (m) {
        const meta = m.getMetadataMap();
        proposed.push({
          id: m.getId()?.getString() ?? randomUUID(),
          type: meta.get('type') ?? '',
          contentType: meta.get('content-type') ?? 'application/octet-stream',
          data: m.getData_asU8(),
          customMetadata: m.getCustomMetadata_asU8(),
        });
      }
    });
    call.on('error', () => undefined);
    call.on('end', () => {
      if (!options) {
        cb({ code: grpc.status.INVALID_ARGUMENT, details: 'double: append without options' }, null);
        return;
      }
      const name = Buffer.from(options.getStreamIdentifier()!.getStreamName_asU8()).toString('utf8');
      const current = this.streams.has(name) ? this.streams.get(name)!.length - 1 : undefined;
      const E = pb.AppendReq.Options.ExpectedStreamRevisionCase;
      const kind = options.getExpectedStreamRevisionCase();
      const ok =
        kind === E.ANY ||
        (kind === E.NO_STREAM && current === undefined) ||
        (kind === E.STREAM_EXISTS && current !== undefined) ||
        (kind === E.REVISION && current !== undefined && BigInt(options.getRevision()) === BigInt(current));
      const resp = new pb.AppendResp();
      if (!ok) {
        const wrong = new pb.AppendResp.WrongExpectedVersion();
        if (current === undefined) wrong.setCurrentNoStream(new shared.Empty());
        else wrong.setCurrentRevision(String(current));
        if (kind === E.REVISION) wrong.setExpectedRevision(options.getRevision());
        else if (kind === E.NO_STREAM) wrong.setExpectedNoStream(new shared.Empty());
        else if (kind === E.STREAM_EXISTS) wrong.setExpectedStreamExists(new shared.Empty());
        else wrong.setExpectedAny(new shared.Empty());
        cb(null, resp.setWrongExpectedVersion(wrong));
        return;
      }
      const revision = proposed.length > 0 ? this.store(name, proposed) : (current ?? -1);
      const success = new pb.AppendResp.Success().setPosition(new pb.AppendResp.Position().setCommitPosition(String(this.commit)).setPreparePosition(String(this.commit)));
      if (revision < 0) success.setNoStream(new shared.Empty());
      else success.setCurrentRevision(String(revision));
      cb(null, resp.setSuccess(success));
    });
  }
}

function toRecorded(identifier: SharedPb.StreamIdentifier, e: Stored): StreamsPb.ReadResp.ReadEvent.RecordedEvent {
  const r = new pb.ReadResp.ReadEvent.RecordedEvent()
    .setId(new shared.UUID().setString(e.id))
    .setStreamIdentifier(identifier)
    .setStreamRevision(String(e.revision))
    .setPreparePosition(String(e.commit))
    .setCommitPosition(String(e.commit))
    .setData(e.data)
    .setCustomMetadata(e.customMetadata);
  r.getMetadataMap().set('type', e.type).set('content-type', e.contentType).set('created', e.created);
  return r;
}
