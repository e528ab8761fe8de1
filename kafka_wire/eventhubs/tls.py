"""TLS for the SASL_SSL listener (Event Hubs' port 9093).

Either certificate files from the configuration, or a private CA and a server
certificate generated on first start into ``DATA_DIR/tls/`` (``ca.pem``,
``ca.key``, ``server.pem``, ``server.key``). Clients trust ``ca.pem``
(``ssl.ca.location``, ``ssl_cafile``, a Java truststore of type PEM). The CA is
kept across restarts; the server certificate is re-issued when it lacks a host
name now needed (a new advertised host) or is within 30 days of expiry. Keys
are ECDSA P-256, which every Kafka client supports.
"""
from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import os
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

__all__ = ["TlsFiles", "ensure_certificates", "server_context", "default_names"]

_VALID_DAYS_CA = 3650
_VALID_DAYS_SERVER = 825
_RENEW_BEFORE = dt.timedelta(days=30)


@dataclass(frozen=True, slots=True)
class TlsFiles:
    cert: Path
    key: Path
    ca: Path | None


def default_names(hosts: list[str], namespaces: list[str]) -> list[str]:
    """Names the server certificate should cover."""
    names = ["localhost", "127.0.0.1", "::1", "*.servicebus.windows.net"]
    try:
        names.append(socket.gethostname())
    except OSError:
        pass
    names += [h for h in hosts if h and h not in ("0.0.0.0", "::")]
    names += [f"{n.lower()}.servicebus.windows.net" for n in namespaces]
    return list(dict.fromkeys(names))


def _write(path: Path, data: bytes, private: bool = False) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _san(names: list[str]):
    from cryptography import x509

    entries = []
    for name in names:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name.strip("[]"))))
        except ValueError:
            entries.append(x509.DNSName(name))
    return x509.SubjectAlternativeName(entries)


def _cert_names(cert) -> set[str]:
    from cryptography import x509

    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return ({str(n) for n in san.get_values_for_type(x509.DNSName)}
            | {str(ip) for ip in san.get_values_for_type(x509.IPAddress)})


def _norm(name: str) -> str:
    try:
        return str(ipaddress.ip_address(name.strip("[]")))
    except ValueError:
        return name


def ensure_certificates(directory: Path, names: list[str]) -> TlsFiles:
    """The generated CA and server certificate in ``directory``, made or renewed as needed."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ca_pem, ca_key_pem = directory / "ca.pem", directory / "ca.key"
    cert_pem, key_pem = directory / "server.pem", directory / "server.key"
    now = dt.datetime.now(dt.timezone.utc)
    pem = serialization.Encoding.PEM
    nopass = serialization.NoEncryption()
    pkcs8 = serialization.PrivateFormat.PKCS8

    if ca_pem.exists() and ca_key_pem.exists():
        ca_cert = x509.load_pem_x509_certificate(ca_pem.read_bytes())
        ca_key = serialization.load_pem_private_key(ca_key_pem.read_bytes(), None)
    else:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafka-wire"),
                             x509.NameAttribute(NameOID.COMMON_NAME, "kafka-wire local CA")])
        ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
        ca_cert = (x509.CertificateBuilder()
                   .subject_name(subject).issuer_name(subject)
                   .public_key(ca_key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(minutes=5))
                   .not_valid_after(now + dt.timedelta(days=_VALID_DAYS_CA))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                                key_encipherment=False, data_encipherment=False,
                                                key_agreement=False, key_cert_sign=True,
                                                crl_sign=True, encipher_only=False,
                                                decipher_only=False), critical=True)
                   .add_extension(ski, critical=False)
                   .sign(ca_key, hashes.SHA256()))
        _write(ca_key_pem, ca_key.private_bytes(pem, pkcs8, nopass), private=True)
        _write(ca_pem, ca_cert.public_bytes(pem))
        log.info("generated a local CA in %s", ca_pem)

    wanted = {_norm(n) for n in names}
    if cert_pem.exists() and key_pem.exists():
        cert = x509.load_pem_x509_certificate(cert_pem.read_bytes())
        fresh = cert.not_valid_after_utc - now > _RENEW_BEFORE
        same_ca = cert.issuer == ca_cert.subject
        if fresh and same_ca and wanted <= _cert_names(cert):
            return TlsFiles(cert_pem, key_pem, ca_pem)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=_VALID_DAYS_SERVER))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=True, key_cert_sign=False, crl_sign=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(_san(sorted(wanted)), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    _write(key_pem, key.private_bytes(pem, pkcs8, nopass), private=True)
    _write(cert_pem, cert.public_bytes(pem) + ca_cert.public_bytes(pem))  # with its chain
    log.info("issued the server certificate %s for %s", cert_pem, ", ".join(sorted(wanted)))
    return TlsFiles(cert_pem, key_pem, ca_pem)


def server_context(files: TlsFiles) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(str(files.cert), str(files.key))
    return ctx
