import { describe, it, expect } from 'vitest';
describe('cart', () => {
  it('adds prices', () => expect(250 + 100).toBe(350));
  it('is empty at first', () => expect([]).toEqual([]));
});
