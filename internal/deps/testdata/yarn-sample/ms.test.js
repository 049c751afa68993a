const test = require("node:test");
const assert = require("node:assert");
const ms = require("ms");
const isNumber = require("is-number");

test("a week is seven days", () => {
  assert.strictEqual(ms("1w"), 7 * 24 * 3600 * 1000);
});

test("a duration is a number", () => {
  assert.ok(isNumber(ms("2 days")));
});
