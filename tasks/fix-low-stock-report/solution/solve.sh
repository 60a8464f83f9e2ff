set -euo pipefail
sed -i 's/item\["qty"\]/item["quantity"]/' stock/report.py

echo "low_stock now reads the 'quantity' key the new export uses (stock/report.py)"
