/**
 * The transaction executor's rules, over a fake session: packing under the
 * packet budget, the owner of a failing op, fences, unknown outcomes read
 * back through receipts, and the order multis are sent in.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  BadArgumentsError,
  BadVersionError,
  ConnectionLossError,
  NodeExistsError,
  NoNodeError,
  type Op,
  type OpResult,
  OutcomeUnknownError,
  PayloadTooLargeError,
  RequestTimeoutError,
  SessionExpiredError,
  type ZooKeeperError,
} from '@zkq/core';
import {
  FencedError,
  type ProtocolOp,
  type QueueEventRecord,
  QueueLayout,
  TX_BYTE_BUDGET,
  type TxUnit,
  type UnitResult,
} from '@zkq/core/internal';
import { MULTI_BYTE_LIMIT, MULTI_OVERHEAD_BYTES, opBytes } from '../../packages/core/src/zk/session.ts';
import { atOp, type FakeSession, fakeExecutor, receiptOf } from '../helpers/fake-session.ts';

const layout = new QueueLayout('q');
const KB = 1024;

type TestUnit = TxUnit & { name: string; builds: number };

/** A unit whose ops are `ops(n)` at its n-th build (0 first). */
function unit(name: string, ops: (n: number) => ProtocolOp[], events?: QueueEventRecord[]): TestUnit {
  const u: TestUnit = {
    name,
    builds: 0,
    build: () => {
      const built = ops(u.builds++);
      return events ? { ops: built, events } : { ops: built };
    },
  };
  return u;
}

/** A unit of one record write of `bytes` bytes. */
function sized(name: string, bytes: number): TestUnit {
  return unit(name, () => [setOp(name, bytes)]);
}

function setOp(id: string, bytes = 10): ProtocolOp {
  return { op: 'setData', path: layout.job(id), data: Buffer.alloc(bytes), version: 1 };
}

/** `n` ops: record writes of job `name` at versions 0..n-1. */
function opsOf(name: string, n: number): ProtocolOp[] {
  return Array.from({ length: n }, (_, v) => ({
    op: 'setData',
    path: layout.job(name),
    data: Buffer.from(name),
    version: v,
  }));
}

/** A unit of `opsOf(name, n)`. */
function ops(name: string, n: number): TestUnit {
  return unit(name, () => opsOf(name, n));
}

const into = (bucket: string, id: string): ProtocolOp => ({
  op: 'create',
  path: `${bucket}/qn-${id}-`,
  mode: 'persistent_sequential',
  role: 'into',
});

/** A multi's ops without its receipt. */
function body(multi: readonly Op[]): Op[] {
  return receiptOf(layout, multi) ? multi.slice(0, -1) : [...multi];
}

/** The names of the units a multi carries (setData ops name their job). */
function unitsIn(multi: readonly Op[]): string[] {
  const names: string[] = [];
  for (const op of multi) {
    const id = op.path.startsWith(layout.jobsDir) ? op.path.slice(op.path.lastIndexOf('/') + 1) : undefined;
    if (id && names[names.length - 1] !== id) names.push(id);
  }
  return names;
}

const multiBytes = (multi: readonly Op[]) => multi.reduce((n, op) => n + opBytes(op), 0);

function ok(r: UnitResult | undefined): boolean {
  return r?.ok === true;
}

/** Lets pending promise callbacks run until `cond` holds (no clock involved). */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((resolve) => setImmediate(resolve));
  assert.ok(cond(), 'condition never held');
}

/** Makes each multi wait for the test: `pending[i]` settles the i-th; `release()` applies all from then on. */
function manual(session: FakeSession) {
  const pending: { resolve: () => void; reject: (err: unknown) => void }[] = [];
  let auto = false;
  session.respond = (multi) =>
    auto
      ? session.applied(multi)
      : new Promise<OpResult[]>((resolve, reject) => {
          pending.push({ resolve: () => resolve(session.applied(multi)), reject });
        });
  return {
    pending,
    release(): void {
      auto = true;
      for (const p of pending) p.resolve();
    },
  };
}

/** Lets every callback pending now (and those they schedule, a few levels deep) run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('packing under the packet budget', () => {
  test('many 300 KB units: several multis under the budget, in unit order, all written', async () => {
    const { session, executor } = fakeExecutor(layout);
    const units = Array.from({ length: 10 }, (_, i) => sized(`u${i}`, 300 * KB));
    const results = await executor.run(units);
    assert.ok(results.every(ok));
    assert.deepEqual(
      session.sent.map((m) => unitsIn(m).length),
      [3, 3, 3, 1],
    );
    assert.deepEqual(
      session.sent.flatMap((m) => unitsIn(m)),
      units.map((u) => u.name),
    );
    for (const multi of session.sent) {
      assert.ok(multiBytes(multi) <= TX_BYTE_BUDGET, `${multiBytes(multi)} bytes`);
      assert.ok(receiptOf(layout, multi));
    }
    assert.equal(new Set(session.sent.map((m) => receiptOf(layout, m))).size, session.sent.length);
    results.forEach((r, i) => {
      assert.deepEqual(r, { ok: true, results: [{ op: 'setData', stat: { version: 2 } }] }, `unit ${i}`);
    });
  });

  test('a unit too large for any multi fails alone with PayloadTooLargeError; the others are written', async () => {
    const { session, executor } = fakeExecutor(layout);
    const results = await executor.run([sized('a', 100), sized('huge', TX_BYTE_BUDGET), sized('b', 100)]);
    assert.ok(ok(results[0]));
    assert.ok(ok(results[2]));
    const error = results[1]?.ok === false ? results[1].error : undefined;
    assert.ok(error instanceof PayloadTooLargeError);
    assert.equal(error.limit, TX_BYTE_BUDGET);
    assert.deepEqual(session.sent.map(unitsIn), [['a'], ['b']]);
  });

  test('the event node is counted: large events make more multis, each under the packet limit', async () => {
    const events = (name: string) => [{ event: 'waiting', jobId: name, blob: 'x'.repeat(150 * KB), ts: 1 }];
    const units = () =>
      Array.from({ length: 6 }, (_, i) => unit(`u${i}`, () => [setOp(`u${i}`, 200 * KB)], events(`u${i}`)));

    const quiet = fakeExecutor(layout, { events: false });
    assert.ok((await quiet.executor.run(units())).every(ok));
    assert.deepEqual(
      quiet.session.sent.map((m) => unitsIn(m).length),
      [5, 1],
    );
    assert.ok(quiet.session.sent.every((m) => !m.some((op) => op.path === layout.eventPrefix())));

    const heard = fakeExecutor(layout, { events: true });
    assert.ok((await heard.executor.run(units())).every(ok));
    assert.deepEqual(
      heard.session.sent.map((m) => unitsIn(m).length),
      [2, 2, 2],
    );
    heard.session.sent.forEach((multi, i) => {
      assert.ok(MULTI_OVERHEAD_BYTES + multiBytes(multi) <= MULTI_BYTE_LIMIT);
      // the unit ops, then the event node (every unit's events, in order), then the receipt
      const event = multi[multi.length - 2];
      assert.equal(event?.op, 'create');
      assert.equal(event.path, layout.eventPrefix());
      assert.equal(event.mode, 'persistent_sequential');
      const logged = JSON.parse(String(event.data)) as QueueEventRecord[];
      assert.deepEqual(
        logged.map((e) => e.jobId),
        [`u${2 * i}`, `u${2 * i + 1}`],
      );
      assert.ok(receiptOf(layout, multi));
    });
  });

  test('maxOps caps the ops per multi, fence ops included; a unit is never split', async () => {
    const plain = fakeExecutor(layout);
    const five = () => ['a', 'b', 'c', 'd', 'e'].map((n) => ops(n, 3));
    assert.ok((await plain.executor.run(five(), { maxOps: 7 })).every(ok));
    assert.deepEqual(plain.session.sent.map(unitsIn), [['a', 'b'], ['c', 'd'], ['e']]);

    const fenced = fakeExecutor(layout);
    const fence = (): ProtocolOp[] => [{ op: 'check', path: '/q/leader/n-0000000001', version: 0, role: 'fence' }];
    assert.ok((await fenced.executor.run(five(), { maxOps: 6, fence })).every(ok));
    assert.deepEqual(fenced.session.sent.map(unitsIn), [['a'], ['b'], ['c'], ['d'], ['e']]);
    for (const multi of fenced.session.sent) assert.deepEqual(multi[0], fence()[0]);
  });
});

describe('the owner of a failing op', () => {
  const fence = (): ProtocolOp[] => [{ op: 'check', path: '/q/leader/n-0000000001', version: 0, role: 'fence' }];

  for (const make of [() => new NoNodeError('/x'), () => new BadVersionError('/x'), () => new NodeExistsError('/x')]) {
    test(`${make().code} at op k fails the unit owning op k alone; the others are sent again`, async () => {
      const { session, executor } = fakeExecutor(layout);
      const units = [ops('a', 2), ops('b', 2), ops('c', 2)];
      const err = atOp(make(), 4); // fence, a0, a1, b0, [b1], c0, c1, receipt
      session.respond = (multi, n) => {
        if (n === 0) throw err;
        return session.applied(multi);
      };
      const conflicts: [TestUnit, ZooKeeperError, ProtocolOp][] = [];
      const results = await executor.run(units, {
        fence,
        onConflict: (u, e, op) => {
          conflicts.push([u, e, op]);
          return undefined;
        },
      });
      const op = session.sent[0]?.[4] as ProtocolOp;
      assert.deepEqual(op, { op: 'setData', path: layout.job('b'), data: Buffer.from('b'), version: 1 });
      assert.deepEqual(conflicts, [[units[1], err, op]]);
      assert.deepEqual(results[1], { ok: false, error: err, op });
      assert.ok(ok(results[0]) && ok(results[2]));
      assert.deepEqual(session.sent.map(unitsIn), [
        ['a', 'b', 'c'],
        ['a', 'c'],
      ]);
      assert.deepEqual(body(session.sent[1] ?? []), [...fence(), ...opsOf('a', 2), ...opsOf('c', 2)]);
      assert.ok(units.every((u) => u.builds === 1));
      // each unit's results are its own ops' results
      assert.equal(results[2]?.ok && results[2].results?.length, 2);
    });
  }

  test('recheck: after a conflict, the units it names stale fail at once; only the rest are sent again', async () => {
    const { session, executor } = fakeExecutor(layout);
    const units = [ops('a', 1), ops('b', 1), ops('c', 1), ops('d', 1)];
    const err = atOp(new BadVersionError('/x'), 1); // a0, [b0], c0, d0, receipt
    session.respond = (multi, n) => {
      if (n === 0) throw err;
      return session.applied(multi);
    };
    const asked: string[][] = [];
    const taken = new BadVersionError(layout.job('c'));
    const results = await executor.run(units, {
      recheck: async (left) => {
        asked.push(left.map((u) => u.name));
        return left.map((u) => (u.name === 'c' ? taken : undefined));
      },
    });
    assert.deepEqual(asked, [['a', 'c', 'd']]);
    assert.deepEqual(results[1], { ok: false, error: err, op: session.sent[0]?.[1] });
    assert.deepEqual(results[2], { ok: false, error: taken });
    assert.ok(ok(results[0]) && ok(results[3]));
    assert.deepEqual(session.sent.map(unitsIn), [
      ['a', 'b', 'c', 'd'],
      ['a', 'd'],
    ]);
  });

  test('recheck that fails (connection lost): the others are sent again as they are', async () => {
    const { session, executor } = fakeExecutor(layout);
    const units = [ops('a', 1), ops('b', 1)];
    session.respond = (multi, n) => {
      if (n === 0) throw atOp(new BadVersionError('/x'), 0);
      return session.applied(multi);
    };
    const results = await executor.run(units, {
      recheck: async () => {
        throw new ConnectionLossError();
      },
    });
    assert.equal(results[0]?.ok, false);
    assert.ok(ok(results[1]));
    assert.deepEqual(session.sent.map(unitsIn), [['a', 'b'], ['b']]);
  });

  test("onConflict's replacement unit is sent instead, in the same place", async () => {
    const { session, executor } = fakeExecutor(layout);
    const pointer = '/q/ready/p-0000000000/b-0000000000/qn-j-0000000001';
    const finish = (withClaim: boolean) =>
      unit('j', () => [
        setOp('j'),
        { op: 'delete', path: pointer },
        ...(withClaim ? [{ op: 'delete', path: layout.claim('j'), role: 'claim' } as ProtocolOp] : []),
        into('/q/completed/b-0000000000', 'j'),
      ]);
    const first = finish(true);
    const instead = finish(false);
    session.respond = (multi, n) => {
      if (n === 0) throw atOp(new NoNodeError(layout.claim('j')), 3); // a0, j0, j1, [j claim], ...
      return session.applied(multi);
    };
    const results = await executor.run([ops('a', 1), first, ops('z', 1)], {
      onConflict: (u, e, op) => (u === first && e instanceof NoNodeError && op.role === 'claim' ? instead : undefined),
    });
    assert.ok(results.every(ok));
    assert.equal(first.builds, 1);
    assert.equal(instead.builds, 1);
    const resent = body(session.sent[1] ?? []);
    assert.deepEqual(unitsIn(resent), ['a', 'j', 'z']);
    assert.ok(!resent.some((op) => op.path === layout.claim('j')));
    assert.equal(results[1]?.ok && results[1].results?.length, 3);
  });

  test('NoNode on a create into a container (role into): forgets it, builds the unit again', async () => {
    const { session, containers, executor } = fakeExecutor(layout);
    const bucket = (n: number) => `/q/ready/p-0000000003/b-000000000${n}`;
    const moved = unit('j', (n) => [setOp('j'), into(bucket(n), 'j')]);
    const other = ops('a', 1);
    session.respond = (multi, n) => {
      if (n === 0) throw atOp(new NoNodeError(bucket(0)), 2); // a0, j0, [j into]
      return session.applied(multi);
    };
    let conflicts = 0;
    const results = await executor.run([other, moved], {
      onConflict: () => {
        conflicts++;
        return undefined;
      },
    });
    assert.ok(results.every(ok));
    assert.equal(conflicts, 0);
    assert.deepEqual(containers.forgotten, [bucket(0)]);
    assert.equal(moved.builds, 2);
    assert.equal(other.builds, 1);
    assert.deepEqual(body(session.sent[1] ?? []), [...opsOf('a', 1), setOp('j'), into(bucket(1), 'j')]);
    // the pointer written tells Containers how full its bucket is
    assert.equal(containers.noted.length, 1);
    assert.equal(containers.noted[0]?.container, '/q/ready/p-0000000003');
    assert.ok(containers.noted[0]?.path.startsWith(`${bucket(1)}/qn-j-`));
  });

  test('a container that keeps vanishing: rebuilt a bounded number of times, then onConflict decides', async () => {
    const { session, executor } = fakeExecutor(layout);
    const moved = unit('j', () => [setOp('j'), into('/q/ready/l/b-0000000000', 'j')]);
    session.respond = () => {
      throw atOp(new NoNodeError(), 1);
    };
    const conflicts: ProtocolOp[] = [];
    const [result] = await executor.run([moved], {
      onConflict: (_u, _e, op) => {
        conflicts.push(op);
        return undefined;
      },
    });
    assert.ok(result?.ok === false && result.error instanceof NoNodeError);
    assert.ok(moved.builds > 1);
    assert.equal(moved.builds, session.sent.length);
    assert.deepEqual(conflicts, [into('/q/ready/l/b-0000000000', 'j')]);
  });

  test('NoNode on the event node or the receipt: that directory is created, every unit sent again', async () => {
    for (const [target, dir] of [
      ['event', layout.eventLog],
      ['receipt', layout.receiptsDir],
    ] as const) {
      const { session, containers, executor } = fakeExecutor(layout, { events: true });
      const units = ['a', 'b'].map((n) => unit(n, () => [setOp(n)], [{ event: 'waiting', jobId: n, ts: 1 }]));
      session.respond = (multi, n) => {
        if (n === 0) throw atOp(new NoNodeError(), target === 'event' ? 2 : 3);
        return session.applied(multi);
      };
      const results = await executor.run(units);
      assert.ok(results.every(ok), target);
      assert.deepEqual(containers.ensured, [dir]);
      assert.deepEqual(session.sent.map(unitsIn), [
        ['a', 'b'],
        ['a', 'b'],
      ]);
    }
  });

  test("without receipts, a failure at the last op is the last unit's, not a missing receipts directory", async () => {
    const { session, containers, executor } = fakeExecutor(layout);
    const err = atOp(new BadVersionError(), 2); // a0, b0, [b1]
    session.respond = (multi, n) => {
      if (n === 0) throw err;
      return session.applied(multi);
    };
    const results = await executor.run([ops('a', 1), ops('b', 2)], { receipt: false });
    assert.ok(ok(results[0]));
    assert.deepEqual(results[1], { ok: false, error: err, op: session.sent[0]?.[2] });
    assert.deepEqual(session.sent.map(unitsIn), [['a', 'b'], ['a']]);
    assert.deepEqual(containers.ensured, []);
  });

  test("without receipts, NoNode on a lease's claim (the last op) goes to onConflict", async () => {
    const { session, executor } = fakeExecutor(layout);
    const renew = unit('j', () => [
      { op: 'check', path: layout.job('j'), version: 3 },
      { op: 'setData', path: layout.claim('j'), data: Buffer.from('{}'), role: 'claim' },
    ]);
    const reclaim = unit('j', () => [
      { op: 'check', path: layout.job('j'), version: 3 },
      { op: 'create', path: layout.claim('j'), data: Buffer.from('{}'), mode: 'ephemeral', role: 'claim' },
    ]);
    session.respond = (multi, n) => {
      if (n === 0) throw atOp(new NoNodeError(layout.claim('j')), 1);
      return session.applied(multi);
    };
    const roles: (string | undefined)[] = [];
    const [result] = await executor.run([renew], {
      receipt: false,
      onConflict: (_u, _e, op) => {
        roles.push(op.role);
        return reclaim;
      },
    });
    assert.ok(ok(result));
    assert.deepEqual(roles, ['claim']);
    assert.equal(session.sent[1]?.[1]?.op, 'create');
  });

  test('an error naming no op (refused locally) ends the run with that error', async () => {
    const { session, executor } = fakeExecutor(layout);
    const err = new BadArgumentsError('too big');
    session.respond = () => {
      throw err;
    };
    await assert.rejects(executor.run([ops('a', 1)]), (e) => e === err);
  });
});

describe('settleAll (runs shared by several callers)', () => {
  test('units of multis that committed keep their result; the rest fail with the error that ended the run', async () => {
    const { session, executor } = fakeExecutor(layout);
    const err = new BadArgumentsError('refused');
    session.respond = (multi, n) => {
      if (n === 1) throw err;
      return session.applied(multi);
    };
    const results = await executor.run([ops('a', 1), ops('b', 1), ops('c', 1)], {
      maxOps: 1,
      receipt: false,
      settleAll: true,
    });
    assert.deepEqual(
      results.map((r) => r.ok),
      [true, false, false],
    );
    assert.ok(results.slice(1).every((r) => !r.ok && r.error === err));
  });

  test('without it the same run rejects', async () => {
    const { session, executor } = fakeExecutor(layout);
    const err = new BadArgumentsError('refused');
    session.respond = (multi, n) => {
      if (n === 1) throw err;
      return session.applied(multi);
    };
    await assert.rejects(executor.run([ops('a', 1), ops('b', 1)], { maxOps: 1, receipt: false }), (e) => e === err);
  });
});

describe('fences', () => {
  test('a failed fence op ends the run with FencedError; nothing more is sent', async () => {
    const { session, executor } = fakeExecutor(layout);
    let fences = 0;
    const fence = (): ProtocolOp[] => {
      fences++;
      return [
        { op: 'check', path: '/q/leader/n-0000000001', version: 0, role: 'fence' },
        { op: 'check', path: '/q/leader', version: -1, role: 'fence' },
      ];
    };
    const err = atOp(new NoNodeError('/q/leader/n-0000000001'), 0);
    session.respond = (multi, n) => {
      if (n === 1) throw err;
      return session.applied(multi);
    };
    await assert.rejects(
      executor.run([ops('a', 1), ops('b', 1), ops('c', 1)], { fence, maxOps: 3, receipt: false }),
      (e) => e instanceof FencedError && e.code === 'ZKQ_FENCED' && e.cause === err,
    );
    assert.deepEqual(session.sent.map(unitsIn), [['a'], ['b']]);
    assert.ok(fences >= 2);
    for (const multi of session.sent) assert.deepEqual(multi.slice(0, 2), fence());
  });

  test('a failure at the second fence op is a fence failure too', async () => {
    const { session, executor } = fakeExecutor(layout);
    const fence = (): ProtocolOp[] => [
      { op: 'check', path: '/q/leader/n-0000000001', version: 0, role: 'fence' },
      { op: 'check', path: '/q/leader', version: -1, role: 'fence' },
    ];
    session.respond = () => {
      throw atOp(new BadVersionError(), 1);
    };
    await assert.rejects(executor.run([ops('a', 1)], { fence }), FencedError);
    assert.equal(session.sent.length, 1);
  });
});

describe('unknown outcomes', () => {
  const lost = [() => new ConnectionLossError(), () => new RequestTimeoutError(1000), () => new SessionExpiredError()];

  for (const make of lost) {
    test(`${make().code}, receipt present: settled as written, not sent again`, async () => {
      const { session, executor } = fakeExecutor(layout);
      session.respond = (multi) => {
        session.present.add(receiptOf(layout, multi) as string); // applied, but the reply was lost
        throw make();
      };
      const results = await executor.run([ops('a', 1), ops('b', 2)]);
      assert.deepEqual(results, [{ ok: true }, { ok: true }]);
      assert.equal(session.sent.length, 1);
      assert.deepEqual(session.barriers, [[{ op: 'check', path: layout.receiptsDir, version: -1 }]]);
      assert.deepEqual(session.existsCalls, [receiptOf(layout, session.sent[0] ?? [])]);
    });

    test(`${make().code}, receipt absent: sent again once, with a new receipt`, async () => {
      const { session, executor } = fakeExecutor(layout);
      session.respond = (multi, n) => {
        if (n === 0) throw make();
        return session.applied(multi);
      };
      const results = await executor.run([ops('a', 1), ops('b', 2)]);
      assert.ok(results.every((r) => r.ok && r.results !== undefined));
      assert.equal(session.sent.length, 2);
      assert.deepEqual(body(session.sent[1] ?? []), body(session.sent[0] ?? []));
      assert.notEqual(receiptOf(layout, session.sent[1] ?? []), receiptOf(layout, session.sent[0] ?? []));
      assert.equal(session.barriers.length, 1);
    });
  }

  test('without receipts: sent again at once, nothing read back', async () => {
    const { session, executor } = fakeExecutor(layout);
    session.respond = (multi, n) => {
      if (n === 0) throw new ConnectionLossError();
      return session.applied(multi);
    };
    const results = await executor.run([ops('a', 1), ops('b', 1)], { receipt: false });
    assert.ok(results.every(ok));
    assert.deepEqual(session.sent.map(unitsIn), [
      ['a', 'b'],
      ['a', 'b'],
    ]);
    assert.ok(session.sent.every((m) => receiptOf(layout, m) === undefined));
    assert.equal(session.barriers.length, 0);
    assert.equal(session.existsCalls.length, 0);
  });

  test('an outcome that stays unknown: OutcomeUnknownError after a bounded number of tries', async () => {
    const { session, executor } = fakeExecutor(layout);
    const err = new ConnectionLossError();
    session.respond = () => {
      throw err;
    };
    const results = await executor.run([ops('a', 1), ops('b', 1)]);
    for (const r of results)
      assert.ok(r.ok === false && r.error instanceof OutcomeUnknownError && r.error.cause === err);
    assert.ok(session.sent.length > 1);
    assert.equal(session.barriers.length, session.sent.length);
  });

  test('the receipts of settled multis are deleted afterwards', async () => {
    const { session, executor } = fakeExecutor(layout);
    await executor.run([sized('a', 600 * KB), sized('b', 600 * KB)]);
    await executor.flushReceipts();
    const receipts = session.sent.map((m) => receiptOf(layout, m));
    assert.equal(receipts.length, 2);
    assert.deepEqual(
      session.cleanups.flat().map((op) => op.path),
      receipts,
    );
  });
});

describe('order', () => {
  const bucket = (n: number) => `/q/ready/p-0000000000/b-000000000${n}`;

  test('inFlight > 1: multis go out in unit order; units sent again go before units not yet sent', async () => {
    const { session, containers, executor } = fakeExecutor(layout);
    const { pending, release } = manual(session);
    const names = ['u0', 'u1', 'u2', 'u3', 'u4', 'u5'];
    const units = names.map((name) => unit(name, (n) => [setOp(name), into(bucket(n), name)]));
    const run = executor.run(units, { inFlight: 3, maxOps: 2 });
    await until(() => session.sent.length === 3);
    await settle();
    assert.deepEqual(session.sent.map(unitsIn), [['u0'], ['u1'], ['u2']]);

    pending[0]?.reject(atOp(new NoNodeError(bucket(0)), 1)); // u0's bucket vanished: rebuilt, sent again
    await until(() => containers.forgotten.length === 1);
    await settle();
    assert.equal(session.sent.length, 3, 'nothing new is sent while earlier multis are in flight');

    pending[2]?.resolve();
    pending[1]?.resolve();
    await until(() => session.sent.length === 6);
    await settle();
    assert.deepEqual(session.sent.map(unitsIn).slice(3), [['u0'], ['u3'], ['u4']]);
    release();
    assert.ok((await run).every(ok));
    assert.deepEqual(session.sent.flatMap(unitsIn), ['u0', 'u1', 'u2', 'u0', 'u3', 'u4', 'u5']);
    assert.equal(units[0]?.builds, 2);
  });

  test('a failure that arrives while the next multi is being built: units sent again still go first', async () => {
    const { session, containers, executor } = fakeExecutor(layout);
    const { pending, release } = manual(session);
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const first = unit('u0', (n) => [setOp('u0'), into(bucket(n), 'u0')]);
    const second = unit('u1', () => [setOp('u1'), into(bucket(0), 'u1')]);
    // Packing the second multi builds the unit after it too, to see whether it fits.
    const slow: TestUnit = {
      name: 'u2',
      builds: 0,
      build: async () => {
        slow.builds++;
        await gate; // a build that waits on the server (a bucket roll)
        return { ops: [setOp('u2'), into(bucket(0), 'u2')] };
      },
    };
    const run = executor.run([first, second, slow], { inFlight: 2, maxOps: 2 });
    await until(() => session.sent.length === 1 && slow.builds === 1);
    pending[0]?.reject(atOp(new NoNodeError(bucket(0)), 1));
    await until(() => containers.forgotten.length === 1);
    await settle();
    open();
    await settle();
    release();
    assert.ok((await run).every(ok));
    assert.equal(second.builds, 1);
    assert.deepEqual(session.sent.flatMap(unitsIn), ['u0', 'u0', 'u1', 'u2']);
  });
});

describe('a unit that reads what the units before it write (seesEarlier)', () => {
  test('it is built once the multis before it settled, and opens the next multi; later units join it', async () => {
    const { session, executor } = fakeExecutor(layout);
    const { pending, release } = manual(session);
    let settledBefore = -1;
    const reader: TestUnit = {
      ...unit('r', () => []),
      seesEarlier: true,
      build: () => {
        settledBefore = session.sent.length - pending.length; // multis replied to when it was built
        reader.builds++;
        return { ops: [setOp('r')] };
      },
    };
    const run = executor.run([ops('a', 1), ops('b', 1), reader, ops('c', 1)], { inFlight: 2 });
    await until(() => session.sent.length === 1);
    await settle();
    assert.equal(reader.builds, 0, 'not built while the multi before it is in flight');
    assert.deepEqual(session.sent.map(unitsIn), [['a', 'b']]);
    pending.shift()?.resolve();
    release();
    assert.ok((await run).every(ok));
    assert.equal(settledBefore, 1, 'built once the first multi settled');
    assert.deepEqual(session.sent.map(unitsIn), [
      ['a', 'b'],
      ['r', 'c'],
    ]);
  });

  test('a unit before it that fails before it is sent (too large) does not let it be built while a multi is in flight', async () => {
    const { session, executor } = fakeExecutor(layout);
    const { pending, release } = manual(session);
    const reader: TestUnit = { ...ops('r', 1), seesEarlier: true };
    reader.build = () => {
      reader.builds++;
      return { ops: opsOf('r', 1) };
    };
    const run = executor.run([sized('a', 100), sized('huge', TX_BYTE_BUDGET), reader], { inFlight: 2 });
    await until(() => session.sent.length >= 1);
    await settle();
    assert.equal(reader.builds, 0, 'not built while the multi before it is in flight');
    pending.shift()?.resolve();
    release();
    const results = await run;
    assert.ok(ok(results[0]) && ok(results[2]));
    assert.ok(results[1]?.ok === false && results[1].error instanceof PayloadTooLargeError);
    assert.deepEqual(session.sent.map(unitsIn), [['a'], ['r']]);
  });

  test('one offered by onConflict after an earlier unit of the same multi: that unit goes first, alone', async () => {
    const { session, executor } = fakeExecutor(layout);
    const key = layout.dedupKey('k');
    session.respond = (multi, n) => {
      if (n === 0) throw atOp(new NodeExistsError(key), 2); // a0, b0, [b's key create]
      return session.applied(multi);
    };
    const taker = unit('b', () => [setOp('b'), { op: 'create', path: key }]);
    let sentBefore = -1;
    const instead: TestUnit = {
      ...unit('b', () => []),
      seesEarlier: true,
      build: () => {
        sentBefore = session.sent.length;
        instead.builds++;
        return { ops: [setOp('b'), { op: 'setData', path: key, data: Buffer.alloc(1), version: 0 }] };
      },
    };
    const results = await executor.run([ops('a', 1), taker, ops('c', 1)], {
      onConflict: (u, e) => (u === taker && e instanceof NodeExistsError ? instead : undefined),
    });
    assert.ok(results.every(ok));
    assert.deepEqual(session.sent.map(unitsIn), [['a', 'b', 'c'], ['a'], ['b', 'c']]);
    assert.equal(sentBefore, 2, 'built once the multi holding a was applied');
  });

  test('a multi that would write nothing (no ops, no events) is not sent; its units are settled', async () => {
    const { session, executor } = fakeExecutor(layout);
    const results = await executor.run([unit('a', () => []), unit('b', () => [])]);
    assert.ok(results.every(ok));
    assert.equal(session.sent.length, 0);
    const logged = fakeExecutor(layout, { events: true });
    const event: QueueEventRecord = { event: 'deduplicated', jobId: '1', ts: 0 };
    assert.ok((await logged.executor.run([unit('a', () => [], [event])])).every(ok));
    assert.equal(logged.session.sent.length, 1, 'its events are written');
  });
});

describe('re-reads', () => {
  test('siblings writing one node at the version they read, in one multi: each goes through, rebuilt from a fresh read', async () => {
    const { session, executor } = fakeExecutor(layout);
    const node = layout.deps('parent');
    let version = 0; // what the server holds: a multi is applied whole, or not at all
    session.respond = (multi) => {
      let next = version;
      multi.forEach((op, i) => {
        if (op.op !== 'setData' || op.path !== node) return;
        if (op.version !== next) throw atOp(new BadVersionError(node), i);
        next++;
      });
      version = next;
      return session.applied(multi);
    };
    const sibling = (name: string) =>
      unit(name, () => [setOp(name), { op: 'setData', path: node, data: Buffer.alloc(1), version, role: 'reread' }]);
    const units = [sibling('a'), sibling('b'), sibling('c')];
    const results = await executor.run(units);
    assert.ok(results.every(ok));
    assert.equal(version, 3);
    // the first multi held all three and failed at b; b and c, which wrote the node at the same
    // stale version, are both built anew: then a, then b alone, then c alone (none fails again)
    assert.deepEqual(
      session.sent.map((m) => unitsIn(body(m))),
      [['a', 'b', 'c'], ['a'], ['b'], ['c']],
    );
    assert.deepEqual(
      units.map((u) => u.builds),
      [1, 2, 2],
    );
  });
});

describe('trims planned from a shared view', () => {
  /** A unit that trims `victim` (role `trim`) at each build, its next victim at the next build. */
  function trimming(name: string, victims: string[]) {
    const dropped: (string | undefined)[] = [];
    const settled: boolean[] = [];
    const u = unit(name, (n) => [
      setOp(name),
      { op: 'delete', path: `${layout.completedDir}/b-0000000000/${victims[n]}`, role: 'trim' },
    ]) as TestUnit & Required<Pick<TxUnit, 'dropped' | 'settled'>>;
    u.dropped = (op) => dropped.push(op.role);
    u.settled = (r) => settled.push(r.ok);
    return { u, dropped, settled };
  }

  test('a trim op that fails rebuilds every trimming unit of its multi, and only those; each is told', async () => {
    const { session, executor } = fakeExecutor(layout);
    const gone = `${layout.completedDir}/b-0000000000/v1`;
    session.respond = (multi) => {
      const i = multi.findIndex((op) => op.path === gone);
      if (i >= 0) throw atOp(new NoNodeError(gone), i);
      return session.applied(multi);
    };
    const a = trimming('a', ['v0', 'v3']);
    const b = trimming('b', ['v1', 'v4']); // v1 was trimmed by another store
    const plain = unit('p', () => [setOp('p')]);
    const results = await executor.run([a.u, b.u, plain]);
    assert.ok(results.every(ok));
    assert.deepEqual(
      session.sent.map((m) => unitsIn(body(m))),
      [
        ['a', 'b', 'p'],
        ['a', 'b', 'p'],
      ],
    );
    assert.deepEqual([a.u.builds, b.u.builds, plain.builds], [2, 2, 1]);
    // both dropped for the failed trim (b's op), then settled once, applied
    assert.deepEqual([a.dropped, b.dropped], [['trim'], ['trim']]);
    assert.deepEqual([a.settled, b.settled], [[true], [true]]);
  });

  test('a unit replaced by onConflict is dropped with the failing op; a unit that fails for good is settled not ok', async () => {
    const { session, executor } = fakeExecutor(layout);
    session.respond = (multi, n) => {
      if (n === 0) throw atOp(new NoNodeError(layout.claim('a')), 1);
      if (n === 1)
        throw atOp(
          new BadVersionError(layout.job('b')),
          multi.findIndex((op) => op.path === layout.job('b')),
        );
      return session.applied(multi);
    };
    const events: string[] = [];
    const withClaim = unit('a', () => [setOp('a'), { op: 'delete', path: layout.claim('a'), role: 'claim' }]);
    withClaim.dropped = (op) => events.push(`a dropped ${op.role}`);
    withClaim.settled = (r) => events.push(`a settled ${r.ok}`);
    const instead = unit('a', () => [setOp('a')]);
    instead.settled = (r) => events.push(`a' settled ${r.ok}`);
    const lost = unit('b', () => [setOp('b')]);
    lost.settled = (r) => events.push(`b settled ${r.ok}`);
    const results = await executor.run([withClaim, lost], {
      onConflict: (u, _err, op) => (u === withClaim && op.role === 'claim' ? instead : undefined),
    });
    assert.deepEqual(results.map(ok), [true, false]);
    assert.deepEqual(events, ['a dropped claim', 'b settled false', "a' settled true"]);
  });
});

describe('units told when their multi is sent', () => {
  test('sending comes in the order multis go out, again on a re-send; unsent only once a multi certainly failed', async () => {
    const { session, executor } = fakeExecutor(layout);
    session.respond = (multi, n) => {
      if (n === 0) throw new ConnectionLossError(); // outcome unknown: its receipt is read back (absent), then re-sent
      if (n === 1) throw atOp(new BadVersionError(layout.job('a')), 0); // certainly not applied
      return session.applied(multi);
    };
    const events: string[] = [];
    const traced = (name: string) => {
      const u = unit(name, () => [setOp(name)]);
      u.sending = () => events.push(`${name} sending`);
      u.unsent = () => events.push(`${name} unsent`);
      return u;
    };
    const results = await executor.run([traced('a'), traced('b')], { maxOps: 1 });
    assert.deepEqual(results.map(ok), [false, true]);
    assert.deepEqual(events, ['a sending', 'a sending', 'a unsent', 'b sending']);
  });

  test('sent: once per multi, with its units, after the multi was handed to the session and before its reply', async () => {
    const { session, executor } = fakeExecutor(layout);
    const events: string[] = [];
    let replies = 0;
    session.respond = async (multi) => {
      await Promise.resolve();
      replies++;
      return session.applied(multi);
    };
    const units = ['a', 'b', 'c'].map((name) => unit(name, () => [setOp(name)]));
    await executor.run(units, {
      maxOps: 2,
      sent: (sent) =>
        events.push(
          `${sent.map((u) => (u as TestUnit).name).join('')} after ${session.sent.length} handed, ${replies} answered`,
        ),
    });
    assert.deepEqual(events, ['ab after 1 handed, 0 answered', 'c after 2 handed, 1 answered']);
  });
});
