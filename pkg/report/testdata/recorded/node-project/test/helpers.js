module.exports = { cents: (n) => Math.round(n * 100) };
