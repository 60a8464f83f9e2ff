sed -i 's/\bget_usr\b/get_user/g' shop/users.py

sed -i 's/\bget_usr\b/get_user/g' shop/orders.py

sed -i 's/\bget_usr\b/get_user/g' shop/billing.py

sed -i 's/\bget_usr\b/get_user/g' shop/cli.py

sed -i 's/\bget_usr\b/get_user/g' tests/test_users.py

echo "renamed get_usr -> get_user in shop/users.py, orders.py, billing.py, cli.py and tests/test_users.py"
