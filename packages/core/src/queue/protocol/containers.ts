/**
 * Containers: where the next pointer of a bucketed container goes.
 *
 * A container (a ready lane, an hour of delayed jobs, a finished set) holds
 * buckets `b-<n>`. Writers append to the tail bucket until it holds
 * BUCKET_CAPACITY pointers, then roll to the next one, so no listing is
 * longer than a bucket. The tail of each container is cached; readers remove
 * empty buckets and containers, so a cached tail can be stale. The rule that
 * keeps that safe is in the executor: a create into a container that failed
 * with NoNode makes the caller `forget` it and build the op again.
 *
 * Directories are made only inside their queue: never its root, which the
 * queue's set-up makes with its `meta` (QueueStore.init). A queue another
 * client obliterated fails a directory's creation with NoNodeError, so that
 * no write (a log line, an event, a pointer) makes part of it again without
 * its `meta`.
 */
import { NoNodeError } from '../../zk/errors.js';
import type { Session } from '../../zk/session.js';
import { BUCKET_CAPACITY, numberOf, type QueueLayout, queueRootOf, sequenceOf } from '../layout.js';

interface Tail {
  bucket: number;
  /** Pointers this writer counts in the tail (its own, and what sequence numbers showed). */
  fill: number;
  /** Reservations since the count was last read from the server (non-sequential pointers). */
  unchecked: number;
  /** The roll to the next bucket, once one writer started it. */
  next?: Promise<Tail>;
}

/** Tries to create a directory whose parents readers keep removing. */
const CREATE_ATTEMPTS = 10;
/** Reservations of non-sequential pointers after which the tail's count is read again. */
const RECOUNT_EVERY = 200;

export class Containers {
  private readonly tails = new Map<string, Promise<Tail>>();
  /** Directories known to exist, or being created (callers share one creation). */
  private readonly known = new Map<string, Promise<void>>();

  constructor(
    private readonly session: Session,
    private readonly layout: QueueLayout,
  ) {}

  /**
   * Creates a directory (and parents, below the queue's root) unless known to
   * exist; concurrent callers share one creation. NoNodeError when the queue
   * is gone.
   */
  ensureDir(path: string): Promise<void> {
    let known = this.known.get(path);
    if (!known) {
      known = this.createPath(path);
      this.known.set(path, known);
      known.catch(() => this.known.delete(path));
    }
    return known;
  }

  /** ensurePath below the queue's root, again when a reader removed a parent between its steps. */
  private async createPath(path: string): Promise<void> {
    const root = queueRootOf(path);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.session.ensurePath(path, { under: root });
      } catch (err) {
        if (!(err instanceof NoNodeError) || attempt >= CREATE_ATTEMPTS) throw err;
        // the queue itself is gone (obliterated): only its set-up makes it again
        if (!(await this.session.exists(root))) throw err;
      }
    }
  }

  /**
   * The bucket path for one more pointer in `container`, counted so that
   * pipelined writes roll buckets on time. Creates what is missing.
   */
  async slot(container: string): Promise<string> {
    for (;;) {
      const tail = await this.tail(container);
      if (tail.fill < BUCKET_CAPACITY) {
        tail.fill++;
        if (++tail.unchecked >= RECOUNT_EVERY) this.recount(container, tail);
        return this.layout.bucketOf(container, tail.bucket);
      }
      // Only the first writer to see the tail full rolls it; the others wait for that roll.
      tail.next ??= this.createPath(this.layout.bucketOf(container, tail.bucket + 1)).then(() => {
        const rolled: Tail = { bucket: tail.bucket + 1, fill: 0, unchecked: 0 };
        this.tails.set(container, Promise.resolve(rolled));
        return rolled;
      });
      tail.next.catch(() => {
        tail.next = undefined;
      });
      await tail.next;
    }
  }

  /** Reads the tail of `container` now, so that the first write into it needs no read. */
  async prepare(container: string): Promise<void> {
    await this.tail(container);
  }

  /** After a write: a sequential pointer's number is the bucket's count of child changes so far. */
  noteCreated(container: string, pointerPath: string): void {
    const cached = this.tails.get(container);
    if (!cached) return;
    const bucketPath = pointerPath.slice(0, pointerPath.lastIndexOf('/'));
    cached.then(
      (tail) => {
        if (numberOf(bucketPath.slice(bucketPath.lastIndexOf('/') + 1)) !== tail.bucket) return;
        tail.fill = Math.max(tail.fill, sequenceOf(pointerPath) + 1);
      },
      () => undefined, // a tail that could not be read (the session closed meanwhile) has nothing to note
    );
  }

  /** Forgets everything cached at or under `path` (a create there met NoNode: it was removed). */
  forget(path: string): void {
    for (const key of [...this.known.keys()]) if (key === path || key.startsWith(`${path}/`)) this.known.delete(key);
    for (const key of [...this.tails.keys()]) {
      if (key === path || key.startsWith(`${path}/`) || path.startsWith(`${key}/`)) this.tails.delete(key);
    }
  }

  /** Forgets every cached directory and tail. */
  forgetAll(): void {
    this.known.clear();
    this.tails.clear();
  }

  private tail(container: string): Promise<Tail> {
    let tail = this.tails.get(container);
    if (!tail) {
      tail = this.readTail(container);
      this.tails.set(container, tail);
      tail.catch(() => this.tails.delete(container));
    }
    return tail;
  }

  private async readTail(container: string): Promise<Tail> {
    await this.ensureDir(container);
    let buckets: string[];
    try {
      buckets = await this.session.getChildren(container);
    } catch (err) {
      if (!(err instanceof NoNodeError)) throw err;
      this.forget(container);
      buckets = [];
      await this.ensureDir(container);
    }
    const last = buckets.reduce((max, b) => Math.max(max, numberOf(b)), 0);
    const path = this.layout.bucketOf(container, last);
    await this.ensureDir(path);
    // The next sequence number is the bucket's count of child changes so far.
    const stat = await this.session.exists(path);
    return { bucket: last, fill: stat?.cversion ?? 0, unchecked: 0 };
  }

  private recount(container: string, tail: Tail): void {
    tail.unchecked = 0;
    void this.session.exists(this.layout.bucketOf(container, tail.bucket)).then(
      (stat) => {
        if (stat) tail.fill = Math.max(tail.fill, stat.cversion);
      },
      () => undefined,
    );
  }
}
