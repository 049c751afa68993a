const assert = require('node:assert');
const { total } = require('../cart');

describe('cart', () => {
  it('totals nothing', () => assert.strictEqual(total([]), 0));
  it('totals two items', () => assert.strictEqual(total([250, 100]), 350));
});
