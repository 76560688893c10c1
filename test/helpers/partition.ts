/**
 * Silent partitions against a real server: a session behind a proxy that
 * drops every byte and every close (`TcpProxy.partition()`), an observer
 * that sees the server's side of things directly, and the moments both
 * saw, on this process's monotonic clock, to compare in order.
 */
import { performance } from 'node:perf_hooks';
import { NoNodeError, type Session, type SessionOptions } from '@zkq/core';
import { sharedZooKeeper, TcpProxy } from '@zkq/testing';
import type { Defer } from './cleanups.js';
import { testSession } from './zk.js';

/** The session timeouts every recipe is checked with (the 30 s one only where it is cheap). */
export const PARTITION_SESSION_TIMEOUTS = [6000, 12_000] as const;

type Ctx = { after(fn: () => unknown): void; name?: string };

export interface BehindProxy {
  proxy: TcpProxy;
  session: Session;
}

/** A session reaching the shared server through a proxy of its own (closed before the proxy). */
export async function sessionBehindProxy(
  t: Ctx,
  defer: Defer,
  options: Partial<SessionOptions> & { sessionTimeout: number },
): Promise<BehindProxy> {
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  defer(() => proxy.stop());
  const session = await testSession(
    { name: t.name, after: (fn) => defer(fn) },
    { ...options, connectionString: proxy.connectionString },
  );
  return { proxy, session };
}

/** A session reaching the shared server through a proxy of its own, both closed after the test (the proxy first). */
export async function sessionThroughProxy(t: Ctx, options: Partial<SessionOptions> = {}): Promise<BehindProxy> {
  const proxy = await TcpProxy.start(await sharedZooKeeper());
  t.after(() => proxy.stop());
  const session = await testSession(t, { ...options, connectionString: proxy.connectionString });
  return { proxy, session };
}

/** When `emitter` next emits `event`, on the monotonic clock. */
export function eventAt(emitter: { once(event: string, fn: () => void): unknown }, event: string): Promise<number> {
  return new Promise((resolve) => emitter.once(event, () => resolve(performance.now())));
}

/**
 * When `path` disappears as `observer` sees it (a data watch, looked at
 * again on any other event): for an ephemeral node, the moment the server
 * ended its session.
 */
export function goneAt(observer: Session, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const look = () => {
      observer.getData(path, { watch: () => look() }).then(
        () => undefined,
        (err: unknown) => {
          if (err instanceof NoNodeError) resolve(performance.now());
          else if (!observer.closed) setTimeout(look, 25);
          else reject(err);
        },
      );
    };
    look();
  });
}

/** Moments of a test, each as first seen, on the monotonic clock. */
export class Timeline {
  readonly at = new Map<string, number>();
  private readonly start = performance.now();

  mark(what: string, when = performance.now()): number {
    if (!this.at.has(what)) this.at.set(what, when);
    return when;
  }

  /** The moment `what` was marked (throws when it was not). */
  of(what: string): number {
    const when = this.at.get(what);
    if (when === undefined) throw new Error(`'${what}' never happened: ${this.toString()}`);
    return when;
  }

  toString(): string {
    return [...this.at]
      .sort((a, b) => a[1] - b[1])
      .map(([what, when]) => `${what} +${Math.round(when - this.start)} ms`)
      .join(', ');
  }
}
