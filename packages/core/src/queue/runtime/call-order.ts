/**
 * CallOrder: async calls reach a shared point in the order they were made,
 * whatever each one awaits on the way there. Pipelined adds of one producer
 * use it: a plain add waits for ids from the queue's counter, a delayed one
 * for ZooKeeper's clock, an add with a custom id for nothing; without a
 * turn, the one that waited least would join the group commit first and be
 * stored ahead of adds called before it.
 */

/** A call's place in line. */
export interface Turn {
  /** Resolves once every earlier turn has passed (or was given up). */
  wait(): Promise<void>;
  /** The call reached the shared point, or gives up its place (it failed, or needs none): later turns go on. Idempotent. */
  pass(): void;
}

export class CallOrder {
  /** Resolves once every turn taken so far has passed. */
  private tail: Promise<void> = Promise.resolve();

  /** Takes the next place in line: call it synchronously where the call is made. */
  enter(): Turn {
    const before = this.tail;
    let pass!: () => void;
    const passed = new Promise<void>((resolve) => {
      pass = resolve;
    });
    this.tail = Promise.all([before, passed]).then(() => undefined);
    return { wait: () => before, pass };
  }

  /** Runs `fn` with a place taken now, given up when it settles (if `fn` did not pass it first). */
  async run<T>(fn: (turn: Turn) => Promise<T>): Promise<T> {
    const turn = this.enter();
    try {
      return await fn(turn);
    } finally {
      turn.pass();
    }
  }
}
