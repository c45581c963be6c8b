/**
 * The built-in demo: "textkit", a small JavaScript text library with real `node:test` tests,
 * built over four milestones (two detailed, two coarse → one renewal), 16 nodes with real
 * dependencies, and one node (`wrap`) whose first attempt fails verification and is revised.
 */

/**
 * The demo's verification: every `test/*.test.js` run by node:test in one process. `node --test`
 * starts a process per test file: textkit's ten files take ~1.9 s a verification on a 2-core VM
 * against ~0.17 s in one process (docs/decisions/0014-speculation-and-test-time.md).
 */
export const TESTS_IN_ONE_PROCESS = ['node', '-e', "const fs = require('fs'); for (const f of fs.existsSync('test') ? fs.readdirSync('test').sort() : []) if (f.endsWith('.test.js')) require('./test/' + f);"];

const header = '"use strict";\n';
const testHeader = (mod: string, names: string) =>
  `"use strict";\nconst test = require("node:test");\nconst assert = require("node:assert");\nconst { ${names} } = require("../src/${mod}.js");\n`;

function mod(id: string, deps: string[], title: string, source: string, tests: string, names: string, extra: Record<string, unknown> = {}) {
  return {
    id,
    title,
    kind: 'writable',
    deps,
    files: {
      [`src/${id}.js`]: header + source,
      [`test/${id}.test.js`]: testHeader(id, names) + tests,
    },
    ...extra,
  };
}

export function demoBlueprint(): Record<string, unknown> {
  return {
    request: {
      title: 'textkit',
      goal: 'a small, dependency-free JavaScript text library with tests',
      audience: 'developers trying longbuild',
    },
    verify: [TESTS_IN_ONE_PROCESS],
    detailedWindow: 2,
    milestones: [
      {
        id: 'core',
        title: 'Core string helpers',
        nodes: [
          { id: 'interfaces', title: 'Module conventions', kind: 'read-only', deps: [], accepted: true, contract: 'textkit-interfaces@1', decision: 'CommonJS modules under src/, one test file per module under test/' },
          {
            id: 'package', title: 'Package manifest', kind: 'writable', deps: ['interfaces'], foundation: 'textkit-package@1', changes: ['verification'],
            files: { 'package.json': JSON.stringify({ name: 'textkit', version: '0.1.0', private: true, main: 'src/index.js', scripts: { test: 'node --test' } }, null, 2) + '\n' },
          },
          mod('words', ['package'], 'Split text into words',
            'function words(text) {\n  return String(text).split(/\\s+/).filter(Boolean);\n}\nmodule.exports = { words };\n',
            'test("splits on any white space", () => assert.deepStrictEqual(words("  a b\\tc\\n"), ["a", "b", "c"]));\ntest("empty text has no words", () => assert.deepStrictEqual(words(""), []));\n',
            'words'),
          mod('capitalize', ['package'], 'Capitalize words',
            'function capitalize(word) {\n  return word ? word[0].toUpperCase() + word.slice(1) : word;\n}\nmodule.exports = { capitalize };\n',
            'test("upper-cases the first letter", () => assert.strictEqual(capitalize("text"), "Text"));\ntest("leaves empty alone", () => assert.strictEqual(capitalize(""), ""));\n',
            'capitalize'),
          mod('slugify', ['words'], 'URL slugs',
            'const { words } = require("./words.js");\nfunction slugify(text) {\n  return words(String(text).toLowerCase().replace(/[^a-z0-9\\s-]/g, " ")).join("-");\n}\nmodule.exports = { slugify };\n',
            'test("joins lower-case words with dashes", () => assert.strictEqual(slugify("Hello, World!"), "hello-world"));\n',
            'slugify'),
        ],
      },
      {
        id: 'formatting',
        title: 'Formatting',
        nodes: [
          mod('truncate', ['words'], 'Truncate at a word boundary',
            'const { words } = require("./words.js");\nfunction truncate(text, max) {\n  if (text.length <= max) return text;\n  let out = "";\n  for (const w of words(text)) {\n    const next = out ? out + " " + w : w;\n    if (next.length + 1 > max) break;\n    out = next;\n  }\n  return out + "…";\n}\nmodule.exports = { truncate };\n',
            'test("keeps short text", () => assert.strictEqual(truncate("short", 10), "short"));\ntest("cuts at a word", () => assert.strictEqual(truncate("the quick brown fox", 11), "the quick…"));\n',
            'truncate'),
          mod('pad', ['package'], 'Padding',
            'function padCenter(text, width, fill = " ") {\n  const total = Math.max(0, width - text.length);\n  const left = Math.floor(total / 2);\n  return fill.repeat(left) + text + fill.repeat(total - left);\n}\nmodule.exports = { padCenter };\n',
            'test("centers text", () => assert.strictEqual(padCenter("ab", 6, "."), "..ab.."));\n',
            'padCenter'),
          mod('wrap', ['words'], 'Word wrap',
            'const { words } = require("./words.js");\nfunction wrap(text, width) {\n  const lines = [];\n  let line = "";\n  for (const w of words(text)) {\n    if (line && (line + " " + w).length > width) {\n      lines.push(line);\n      line = w;\n    } else {\n      line = line ? line + " " + w : w;\n    }\n  }\n  if (line) lines.push(line);\n  return lines;\n}\nmodule.exports = { wrap };\n',
            'test("wraps at the width", () => assert.deepStrictEqual(wrap("aa bb cc dd", 5), ["aa bb", "cc dd"]));\ntest("a long word stays whole", () => assert.deepStrictEqual(wrap("abcdefgh", 3), ["abcdefgh"]));\n',
            'wrap',
            {
              failAttempts: 1,
              failFiles: {
                'src/wrap.js': header + 'const { words } = require("./words.js");\n// First attempt: forgets the last line.\nfunction wrap(text, width) {\n  const lines = [];\n  let line = "";\n  for (const w of words(text)) {\n    if (line && (line + " " + w).length > width) { lines.push(line); line = w; } else { line = line ? line + " " + w : w; }\n  }\n  return lines;\n}\nmodule.exports = { wrap };\n',
                'test/wrap.test.js': testHeader('wrap', 'wrap') + 'test("wraps at the width", () => assert.deepStrictEqual(wrap("aa bb cc dd", 5), ["aa bb", "cc dd"]));\n',
              },
            }),
          mod('template', ['capitalize'], 'Tiny templates',
            'const { capitalize } = require("./capitalize.js");\nfunction render(template, values) {\n  return template.replace(/\\{(\\^?)(\\w+)\\}/g, (_, cap, key) => {\n    const v = String(values[key] ?? "");\n    return cap ? capitalize(v) : v;\n  });\n}\nmodule.exports = { render };\n',
            'test("fills placeholders", () => assert.strictEqual(render("Hi {^name}, {n} new", { name: "ada", n: 3 }), "Hi Ada, 3 new"));\n',
            'render'),
        ],
      },
      {
        id: 'collections',
        title: 'Word collections',
        intent: 'counting and grouping words',
        nodes: [
          mod('count', ['words'], 'Word counts',
            'const { words } = require("./words.js");\nfunction countWords(text) {\n  const counts = {};\n  for (const w of words(text.toLowerCase())) counts[w] = (counts[w] ?? 0) + 1;\n  return counts;\n}\nmodule.exports = { countWords };\n',
            'test("counts case-insensitively", () => assert.deepStrictEqual(countWords("a A b"), { a: 2, b: 1 }));\n',
            'countWords'),
          mod('unique', ['words'], 'Unique words',
            'const { words } = require("./words.js");\nfunction uniqueWords(text) {\n  return [...new Set(words(text))];\n}\nmodule.exports = { uniqueWords };\n',
            'test("keeps first occurrences in order", () => assert.deepStrictEqual(uniqueWords("b a b c a"), ["b", "a", "c"]));\n',
            'uniqueWords'),
          mod('top', ['count'], 'Most frequent words',
            'const { countWords } = require("./count.js");\nfunction topWords(text, n) {\n  return Object.entries(countWords(text)).sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1)).slice(0, n).map(([w]) => w);\n}\nmodule.exports = { topWords };\n',
            'test("ranks by count then alphabetically", () => assert.deepStrictEqual(topWords("b a b c a b", 2), ["b", "a"]));\n',
            'topWords'),
          { id: 'api-review', title: 'API review', kind: 'read-only', deps: ['top', 'unique'], decision: 'Public API: words, capitalize, slugify, truncate, padCenter, wrap, render, countWords, uniqueWords, topWords' },
        ],
      },
      {
        id: 'release',
        title: 'Release',
        intent: 'one entry point, docs and release notes',
        nodes: [
          mod('index', ['api-review', 'slugify', 'truncate', 'pad', 'wrap', 'template'], 'Entry point',
            'module.exports = {\n  ...require("./words.js"),\n  ...require("./capitalize.js"),\n  ...require("./slugify.js"),\n  ...require("./truncate.js"),\n  ...require("./pad.js"),\n  ...require("./wrap.js"),\n  ...require("./template.js"),\n  ...require("./count.js"),\n  ...require("./unique.js"),\n  ...require("./top.js"),\n};\n',
            'test("exports the reviewed API", () => assert.deepStrictEqual(Object.keys(api).sort(), ["capitalize", "countWords", "padCenter", "render", "slugify", "topWords", "truncate", "uniqueWords", "words", "wrap"]));\n',
            '...api'),
          {
            id: 'readme', title: 'README', kind: 'writable', deps: ['index'],
            files: { 'README.md': '# textkit\n\nA small text library, built by longbuild\'s demo.\n\n```js\nconst { slugify, wrap } = require("textkit");\nslugify("Hello, World!"); // "hello-world"\n```\n' },
          },
          { id: 'release-notes', title: 'Release notes', kind: 'read-only', deps: ['readme'], decision: 'textkit 0.1.0: ten helpers, each with tests' },
        ],
      },
    ],
  };
}
