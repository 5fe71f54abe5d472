"""Rules of ours on a rendered overlay, beyond the API schema (deploy/k8s/validate).

Usage: check_rules.py RENDERED.yaml. Prints each broken rule and exits 1 if any.
"""
import sys

import yaml

# Secrets an operator creates before applying (docs/operations.md "Kubernetes"); all others must be rendered.
OPERATOR_SECRETS = {"cdapi-secrets", "cdapi-auth-keys", "cdapi-internal", "cdapi-tls"}


def main(path):
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    errors = []
    names = {(d["kind"], d["metadata"]["name"]) for d in docs}
    services = [d for d in docs if d["kind"] == "Service"]
    for d in docs:
        if d["kind"] not in ("Deployment", "Job"):
            continue
        name = d["metadata"]["name"]
        pod = d["spec"]["template"]["spec"]
        labels = d["spec"]["template"]["metadata"].get("labels", {})
        if pod.get("automountServiceAccountToken") is not False:
            errors.append(f"{name}: automountServiceAccountToken must be false")
        if not pod.get("securityContext", {}).get("runAsNonRoot"):
            errors.append(f"{name}: pod must run as non-root")
        for c in pod["containers"]:
            sc = c.get("securityContext", {})
            if not sc.get("readOnlyRootFilesystem") or sc.get("allowPrivilegeEscalation") is not False:
                errors.append(f"{name}/{c['name']}: read-only root filesystem, no privilege escalation")
            res = c.get("resources", {})
            if not res.get("requests", {}).get("cpu") or not res.get("limits", {}).get("memory"):
                errors.append(f"{name}/{c['name']}: needs a cpu request and a memory limit")
            if d["kind"] == "Deployment":
                for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                    if probe not in c:
                        errors.append(f"{name}/{c['name']}: no {probe}")
            for ref in c.get("envFrom", []):
                for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
                    if key in ref and (kind, ref[key]["name"]) not in names and ref[key]["name"] not in OPERATOR_SECRETS:
                        errors.append(f"{name}: {kind} {ref[key]['name']} is neither rendered nor created by the operator")
        for v in pod.get("volumes", []):
            mode = v.get("secret", {}).get("defaultMode", 0o644)
            if "secret" in v and not (mode & 0o004 or (mode & 0o040 and pod.get("securityContext", {}).get("fsGroup") is not None)):
                errors.append(f"{name}: secret volume {v['name']} (mode {mode:o}) is unreadable by a non-root user without fsGroup and group-read")
            s = v.get("secret", {}).get("secretName")
            if s and ("Secret", s) not in names and s not in OPERATOR_SECRETS:
                errors.append(f"{name}: Secret {s} is neither rendered nor created by the operator")
        if d["kind"] == "Deployment":
            if not any(all(labels.get(k) == v for k, v in s["spec"].get("selector", {}).items()) for s in services):
                errors.append(f"{name}: no Service selects its pods")
            if d["spec"].get("strategy", {}).get("rollingUpdate", {}).get("maxUnavailable") != 0:
                errors.append(f"{name}: rolling updates must keep every replica (maxUnavailable: 0)")
    for e in errors:
        print(f"ERROR {path}: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
