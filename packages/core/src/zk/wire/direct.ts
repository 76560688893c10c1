/**
 * The wire client's single-request methods without their retry wrapper,
 * for a client made with `retries: 0` (the session's own timeouts and
 * retries apply).
 */
import zookeeper from 'node-zookeeper-client';
import { type WireClient, wireErrorCode } from './convert.js';
import { type Cb, type ManagerLike, PIPE_OP, type RecordClass, type Reply } from './internals.js';
import type { PipeInternals } from './pipe-check.js';

/** The client's single-request methods without the retry wrapper (its `retries: 0` behaviour). */
export function sendDirectly(client: WireClient, m: ManagerLike, internals: PipeInternals): void {
  const { jute, Exception } = internals;
  const protocol = jute.protocol as Record<string, RecordClass>;
  const Request = jute.Request as NonNullable<PipeInternals['jute']['Request']>;
  const validate = internals.Path.validate as (path: string) => void;
  const send = (type: number, name: string, fields: Record<string, unknown>, reply: Reply) => {
    const header = new (protocol.RequestHeader as RecordClass)();
    header.type = type;
    const payload = Object.assign(new (protocol[name] as RecordClass)(), fields);
    m.queue(new Request(header, payload), reply);
  };
  const copy = (data: Buffer) => Buffer.from(data);
  const c = client as unknown as Record<string, Cb>;
  c.create = (path, ...rest) => {
    validate(path as string);
    let data: Buffer | undefined;
    let acls: { toRecord(): unknown }[] = (zookeeper.ACL as unknown as { OPEN_ACL_UNSAFE: [] }).OPEN_ACL_UNSAFE;
    let mode: number = zookeeper.CreateMode.PERSISTENT;
    let callback: Cb | undefined;
    for (const arg of rest) {
      if (Array.isArray(arg)) acls = arg;
      else if (typeof arg === 'number') mode = arg;
      else if (Buffer.isBuffer(arg)) data = arg;
      else if (typeof arg === 'function') callback = arg as Cb;
    }
    const done = callback as Cb;
    const fields = { path, acl: acls.map((a) => a.toRecord()), flags: mode, ...(data ? { data: copy(data) } : {}) };
    send(PIPE_OP.CREATE, 'CreateRequest', fields, (err, res) => (err ? done(err) : done(null, res?.payload.path)));
  };
  c.remove = (path, version, callback) => {
    const [v, done] = callback ? [version, callback as Cb] : [-1, version as Cb];
    validate(path as string);
    send(PIPE_OP.DELETE, 'DeleteRequest', { path, version: v }, (err) => done(err));
  };
  c.setData = (path, data, version, callback) => {
    const [v, done] = callback ? [version, callback as Cb] : [-1, version as Cb];
    validate(path as string);
    send(PIPE_OP.SET_DATA, 'SetDataRequest', { path, data: copy(data as Buffer), version: v }, (err, res) =>
      err ? done(err) : done(null, res?.payload.stat),
    );
  };
  c.getData = (path, watcher, callback) => {
    const [w, done] = callback ? [watcher, callback as Cb] : [undefined, watcher as Cb];
    validate(path as string);
    send(PIPE_OP.GET_DATA, 'GetDataRequest', { path, watch: typeof w === 'function' }, (err, res) => {
      if (err) return done(err);
      if (w) m.registerDataWatcher(path as string, w);
      done(null, res?.payload.data, res?.payload.stat);
    });
  };
  c.exists = (path, watcher, callback) => {
    const [w, done] = callback ? [watcher, callback as Cb] : [undefined, watcher as Cb];
    validate(path as string);
    send(PIPE_OP.EXISTS, 'ExistsRequest', { path, watch: typeof w === 'function' }, (err, res) => {
      if (err && wireErrorCode(err) !== Exception.NO_NODE) return done(err);
      const existence = res?.header.err === Exception.OK;
      if (w && existence) m.registerDataWatcher(path as string, w);
      else if (w) m.registerExistenceWatcher(path as string, w);
      done(null, existence ? res?.payload.stat : null);
    });
  };
  c.getChildren = (path, watcher, callback) => {
    const [w, done] = callback ? [watcher, callback as Cb] : [undefined, watcher as Cb];
    validate(path as string);
    send(PIPE_OP.GET_CHILDREN2, 'GetChildren2Request', { path, watch: typeof w === 'function' }, (err, res) => {
      if (err) return done(err);
      if (w) m.registerChildWatcher(path as string, w);
      done(null, res?.payload.children, res?.payload.stat);
    });
  };
}
