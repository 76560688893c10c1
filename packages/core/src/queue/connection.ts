/** Opening the session of a Queue, Worker or QueueEvents from BullMQ-style options. */
import { InvalidArgumentError } from '../errors.js';
import { saslOptionsProblem } from '../zk/sasl.js';
import { Session } from '../zk/session.js';
import { tlsOptionsProblem } from '../zk/tls.js';
import type { ConnectionOptions } from './types.js';

/** The namespace node every queue lives under unless `prefix` says otherwise. */
export const DEFAULT_PREFIX = 'zkq';

/** Throws InvalidArgumentError unless `connection` can be used. */
export function validateConnection(connection: unknown): asserts connection is ConnectionOptions {
  const c = connection as Partial<ConnectionOptions> | undefined;
  if (!c || typeof c !== 'object' || typeof c.connectionString !== 'string' || !c.connectionString.trim()) {
    throw new InvalidArgumentError(
      'connection.connectionString is required, e.g. { connectionString: "127.0.0.1:2181" }',
      'connection',
    );
  }
  for (const key of ['sessionTimeout', 'connectTimeout', 'requestTimeout'] as const) {
    const v = c[key];
    if (v !== undefined && (!Number.isFinite(v) || v <= 0)) {
      throw new InvalidArgumentError(`connection.${key} must be a positive number of ms`, `connection.${key}`);
    }
  }
  if (c.auth !== undefined && (typeof c.auth !== 'string' || !c.auth.includes(':'))) {
    throw new InvalidArgumentError('connection.auth must be "user:password"', 'connection.auth');
  }
  const tlsProblem = tlsOptionsProblem(c.tls, 'connection.tls');
  if (tlsProblem) throw new InvalidArgumentError(...tlsProblem);
  const saslProblem = saslOptionsProblem(c.sasl, 'connection.sasl');
  if (saslProblem) throw new InvalidArgumentError(...saslProblem);
  if (c.clock !== undefined && c.clock !== 'zookeeper' && c.clock !== 'process') {
    throw new InvalidArgumentError(
      `connection.clock must be 'zookeeper' or 'process', got ${String(c.clock)}`,
      'connection.clock',
    );
  }
}

/** ZooKeeper's own tree (quotas, config): nothing of zkq may live under it. */
const ZOOKEEPER_RESERVED = 'zookeeper';

/**
 * Throws InvalidArgumentError unless `prefix` names a namespace node a queue
 * may live under; returns it as an absolute path (`zkq` -> `/zkq`). Refused:
 * characters other than A-Z a-z 0-9 . _ - /, the root itself (`/`, which
 * would put queues beside ZooKeeper's own nodes), empty, `.` or `..`
 * segments, and anything under `/zookeeper`, ZooKeeper's reserved tree.
 */
export function validatePrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || !/^[A-Za-z0-9._/-]{1,200}$/.test(prefix)) {
    throw new InvalidArgumentError(`invalid prefix '${prefix}': use 1-200 characters of A-Z a-z 0-9 . _ - /`, 'prefix');
  }
  const segments = prefix.replace(/^\/+|\/+$/g, '').split('/');
  if (segments.some((seg) => seg === '' || seg === '.' || seg === '..')) {
    throw new InvalidArgumentError(
      `invalid prefix '${prefix}': it must name a node below the root, with no empty, . or .. segment`,
      'prefix',
    );
  }
  if (segments[0] === ZOOKEEPER_RESERVED) {
    throw new InvalidArgumentError(`invalid prefix '${prefix}': /zookeeper is reserved by ZooKeeper`, 'prefix');
  }
  return `/${segments.join('/')}`;
}

/** Connects a session rooted at the queue prefix. */
export function openSession(
  connection: ConnectionOptions,
  prefix = DEFAULT_PREFIX,
  signal?: AbortSignal,
): Promise<Session> {
  validateConnection(connection);
  const namespace = validatePrefix(prefix);
  return Session.connect({ ...connection, namespace }, { signal });
}
