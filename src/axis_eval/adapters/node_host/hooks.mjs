// Module resolve hook (module.register): "@netlify/axis" means axis-eval's shim.
let shimUrl;

export async function initialize(data) {
  shimUrl = data.shimUrl;
}

export async function resolve(specifier, context, nextResolve) {
  if (specifier === "@netlify/axis" || specifier.startsWith("@netlify/axis/")) {
    return { url: shimUrl, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
