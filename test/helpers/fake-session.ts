/**
 * Fakes of the narrow interfaces the transaction executor uses (a session's
 * multi/exists/getChildren/retry/ensurePath, Containers, the event sink), so
 * its rules can be tested without ZooKeeper. The fake session records every
 * multi; a test decides each one's outcome through `respond`.
 */
import type { Op, OpResult, Session, Stat, ZooKeeperError } from '@zkq/core';
import {
  type Containers,
  type EventSink,
  type QueueEventRecord,
  type QueueLayout,
  TxExecutor,
} from '@zkq/core/internal';

/** What a unit multi does: resolve with results (default: applied), or throw. */
export type Respond = (ops: readonly Op[], n: number) => OpResult[] | Promise<OpResult[]>;

export class FakeSession {
  /** Multis carrying units, in the order they were sent. */
  readonly sent: Op[][] = [];
  /** Write barriers sent to read a receipt back. */
  readonly barriers: Op[][] = [];
  /** Multis deleting receipts of settled transactions. */
  readonly cleanups: Op[][] = [];
  /** Paths asked about with `exists`. */
  readonly existsCalls: string[] = [];
  /** Nodes `exists` reports present (receipts of multis applied whose reply was lost). */
  readonly present = new Set<string>();
  respond: Respond = (ops) => this.applied(ops);
  private seq = 0;

  constructor(private readonly layout: QueueLayout) {}

  async multi(ops: readonly Op[]): Promise<OpResult[]> {
    const receipts = `${this.layout.receiptsDir}/`;
    if (ops.length === 1 && ops[0]?.op === 'check' && ops[0].path === this.layout.receiptsDir) {
      this.barriers.push([...ops]);
      return [{ op: 'check' }];
    }
    if (ops.length > 0 && ops.every((op) => op.op === 'delete' && op.path.startsWith(receipts))) {
      this.cleanups.push([...ops]);
      return ops.map(() => ({ op: 'delete' }));
    }
    this.sent.push([...ops]);
    return this.respond(ops, this.sent.length - 1);
  }

  /** The write barrier: recorded like the check-only multi a real session sends. */
  async sync(path: string): Promise<void> {
    this.barriers.push([{ op: 'check', path, version: -1 }]);
  }

  async exists(path: string): Promise<Stat | null> {
    this.existsCalls.push(path);
    return this.present.has(path) ? ({ version: 0, cversion: 0, numChildren: 0 } as Stat) : null;
  }

  async getChildren(_path: string): Promise<string[]> {
    return [];
  }

  async ensurePath(_path: string): Promise<void> {}

  retry<T>(fn: (attempt: number) => Promise<T>): Promise<T> {
    return fn(0);
  }

  /** The results a server gives for `ops` applied; sequential creates get a sequence number. */
  applied(ops: readonly Op[]): OpResult[] {
    return ops.map((op): OpResult => {
      switch (op.op) {
        case 'create':
          return {
            op: 'create',
            path: op.mode?.endsWith('sequential') ? `${op.path}${String(this.seq++).padStart(10, '0')}` : op.path,
          };
        case 'setData':
          return { op: 'setData', stat: { version: (op.version ?? 0) + 1 } as Stat };
        case 'delete':
          return { op: 'delete' };
        default:
          return { op: 'check' };
      }
    });
  }
}

/** `err` as a multi reports it: failing at op `index`. */
export function atOp<E extends ZooKeeperError>(err: E, index: number): E {
  err.opIndex = index;
  return err;
}

/** The receipt created by a unit multi, if any (its last op). */
export function receiptOf(layout: QueueLayout, ops: readonly Op[]): string | undefined {
  const last = ops[ops.length - 1];
  return last?.op === 'create' && last.path.startsWith(`${layout.receiptsDir}/`) ? last.path : undefined;
}

export class FakeContainers {
  readonly forgotten: string[] = [];
  readonly ensured: string[] = [];
  readonly noted: { container: string; path: string }[] = [];

  forget(path: string): void {
    this.forgotten.push(path);
  }

  async ensureDir(path: string): Promise<void> {
    this.ensured.push(path);
  }

  noteCreated(container: string, path: string): void {
    this.noted.push({ container, path });
  }
}

export class FakeEvents {
  constructor(
    private readonly layout: QueueLayout,
    public enabled = false,
  ) {}

  op(events: QueueEventRecord[]): Op | undefined {
    if (!this.enabled || events.length === 0) return undefined;
    return {
      op: 'create',
      path: this.layout.eventPrefix(),
      data: Buffer.from(JSON.stringify(events)),
      mode: 'persistent_sequential',
    };
  }
}

/** A TxExecutor over the fakes. */
export function fakeExecutor(layout: QueueLayout, o: { events?: boolean } = {}) {
  const session = new FakeSession(layout);
  const containers = new FakeContainers();
  const events = new FakeEvents(layout, o.events ?? false);
  const executor = new TxExecutor(
    session as unknown as Session,
    layout,
    containers as unknown as Containers,
    events as unknown as EventSink,
  );
  return { session, containers, events, executor };
}
