/** An HTTP answer's body as JSON when it parses, else as the text it was (an error page, an empty body). */
export function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
