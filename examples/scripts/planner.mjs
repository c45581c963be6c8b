#!/usr/bin/env node
// A tiny real planner: reads the planner input (JSON) on stdin and prints a proposal on stdout.
// The request names features; each becomes a milestone with one module node. It proposes the
// first two as detailed milestones and the rest as coarse; a renewal promotes the next one or two.
import { readFileSync } from 'node:fs';

const input = JSON.parse(readFileSync(0, 'utf8'));
const features = input.request.features ?? [];
const milestone = (f) => ({ id: f, title: `Feature ${f}`, intent: `implement ${f}` });
const nodes = (f, i) => [{ id: `${f}-module`, kind: 'writable', title: `${f} module`, deps: i > 0 ? [`${features[i - 1]}-module`] : [] }];

let start = 0;
if (input.purpose === 'renew') start = features.indexOf(input.horizon.coarse[0].id);
const window = features.slice(start, start + 2);
const proposal = {
  detailed: window.map((f) => ({ ...milestone(f), nodes: nodes(f, features.indexOf(f)) })),
  coarse: features.slice(start + window.length, start + window.length + 12).map(milestone),
};
process.stdout.write(JSON.stringify(proposal));
