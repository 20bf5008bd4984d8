/** Figures and times as the server's pages write them (console/html.ts `fmt` and `when`). */
export const fmt = (n: number): string => Number(n).toLocaleString('en-US');

export const when = (iso: string): string => iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC');

/** The element with this id, of this type; null when the page has none. */
export function byId<T extends HTMLElement>(id: string, type: new () => T): T | null {
  const el = document.getElementById(id);
  return el instanceof type ? el : null;
}

/** The first element under `root` matching `selector`, of this type; throws when the markup lacks it. */
export function part<T extends Element>(root: ParentNode, selector: string, type: new () => T): T {
  const el = root.querySelector(selector);
  if (!(el instanceof type)) throw new Error(`console script: no ${selector} in the page`);
  return el;
}
