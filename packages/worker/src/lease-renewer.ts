/**
 * LeaseRenewer: keeps the claims of running jobs alive. Every `renewMs` it
 * rewrites the lease of every claim this worker holds, in one transaction;
 * a claim that vanished with an expired session is re-created when the job
 * record still carries this attempt's token; one that was revoked (the token
 * moved on) is reported so the worker can abort that attempt.
 */
import { claimPayload, NoNodeError, type Op, type QueueStore } from '@zkq/core';

export interface Lease {
  id: string;
  token: number;
  progress?: unknown;
}

export class LeaseRenewer {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly store: QueueStore,
    private readonly workerId: string,
    private readonly lockDuration: number,
    private readonly renewMs: number,
    private readonly leases: () => Lease[],
    private readonly onLost: (id: string) => void,
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => {
      this.running ??= this.renew()
        .catch(this.onError)
        .finally(() => {
          this.running = undefined;
        });
    }, this.renewMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /**
   * Re-creates a claim node that vanished with an expired session, if the
   * record still carries this attempt's token (nobody claimed the job since).
   * Resolves false when the job is no longer ours.
   */
  async reclaim(lease: Lease): Promise<boolean> {
    try {
      await this.store.session.multi([
        { op: 'check', path: this.store.layout.job(lease.id), version: lease.token },
        {
          op: 'create',
          path: this.store.layout.claim(lease.id),
          data: claimPayload(this.workerId, lease.token, this.lockDuration, lease.progress),
          mode: 'ephemeral',
        },
      ]);
      return true;
    } catch {
      return false;
    }
  }

  /** Renews every lease now. */
  async renew(): Promise<void> {
    let leases = this.leases();
    while (leases.length > 0) {
      const ops: Op[] = leases.map((l) => ({
        op: 'setData',
        path: this.store.layout.claim(l.id),
        data: claimPayload(this.workerId, l.token, this.lockDuration, l.progress),
      }));
      try {
        await this.store.session.multi(ops);
        return;
      } catch (err) {
        const index = (err as { opIndex?: number }).opIndex;
        if (!(err instanceof NoNodeError) || index === undefined) throw err;
        const gone = leases[index] as Lease;
        if (!(await this.reclaim(gone))) this.onLost(gone.id);
        leases = leases.filter((l) => l !== gone);
      }
    }
  }
}
