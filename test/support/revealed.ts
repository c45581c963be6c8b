/**
 * Every way `text` still gives `secret` away, found by decoding rather than by matching the forms
 * the redactor masks: each line, and each of its suffixes, read as base64 (both alphabets), as hex
 * (at either nibble) and percent-decoded.
 */
export function revealed(text: string, secret: string): string[] {
  const found: string[] = [];
  if (text.includes(secret)) found.push('as written');
  for (const line of text.split('\n')) {
    for (let i = 0; i < Math.min(line.length, 400); i++) {
      const rest = line.slice(i);
      if (Buffer.from(rest.replace(/-/g, '+').replace(/_/g, '/'), 'base64').includes(secret)) found.push(`base64 at ${i}`);
      if (/^[0-9a-fA-F]/.test(rest) && Buffer.from(rest.match(/^[0-9a-fA-F]*/)![0], 'hex').includes(secret)) found.push(`hex at ${i}`);
    }
    try {
      if (decodeURIComponent(line).includes(secret)) found.push('percent-encoded');
    } catch {
      // not percent-encoded
    }
  }
  return [...new Set(found)];
}
