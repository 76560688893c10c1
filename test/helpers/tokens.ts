/**
 * A Job's `token` string names its attempt: the ready pointer's czxid (base
 * 36), a dot, then the fencing token (the pointer's version). A job added
 * again under the same id gets a new pointer, whose versions start again.
 */

/** The fencing token a Job's `token` string carries (after its pointer's name). */
export function fencing(token: string): string;
export function fencing(token: string | undefined): string | undefined;
export function fencing(token: string | undefined): string | undefined {
  return token?.slice(token.indexOf('.') + 1);
}
